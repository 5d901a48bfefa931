//! The lookup of one op's record and tensors, shared by validation and by each run of a session.

use super::{byte_size, Model, UDims};
use crate::format::{OpRecord, Storage};
use crate::kernels::family;
use crate::schema::{DType, OpKind, MAX_OP_INPUTS, MAX_RANK};
use crate::Error;

/// One tensor of an op, looked up: its dtype, its dims, and where its bytes are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operand {
    pub(crate) dtype: DType,
    pub(crate) dims: UDims,
    /// `(start, end)` in the weights section, or in the planned activation region if `in_arena`.
    pub(crate) range: (usize, usize),
    pub(crate) in_arena: bool,
}

impl Operand {
    /// The slot of an input the op does not have.
    const NONE: Operand = Operand {
        dtype: DType::F32,
        dims: UDims {
            dims: [0; MAX_RANK],
            rank: 0,
        },
        range: (0, 0),
        in_arena: false,
    };
}

/// An op's record and its tensors ([`Model::op_tensors`]).
pub(crate) struct OpTensors {
    pub(crate) op: OpRecord,
    /// The output (in the arena).
    pub(crate) y: Operand,
    /// The inputs in order; the first `n` are the op's, the rest [`Operand::NONE`].
    pub(crate) x: [Operand; MAX_OP_INPUTS],
    pub(crate) n: usize,
    /// A Reshape planned on its input's bytes: it runs no kernel.
    pub(crate) aliased: bool,
    /// Every input and the output are f32.
    pub(crate) all_f32: bool,
}

impl<'b, const E: u64> Model<'b, E> {
    /// Looks up op `i`'s record and tensors and hands them to `f`: once for [`Model::validate_op`] and
    /// on each run of a session. The record decodes, the arity fits the kind, every tensor id is in range,
    /// the output lives in the arena, and no input overlaps it there (a Reshape planned on its input's
    /// bytes excepted). The lookup stays in this frame and `f` borrows it: returned, it would be copied
    /// (some 800 bytes) on every op of every run.
    pub(crate) fn with_op_tensors(
        &self,
        i: usize,
        f: &mut dyn FnMut(&OpTensors) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let bad = |reason| Error::BadOp {
            op: i as u32,
            reason,
        };
        let op: OpRecord = self.op(i).ok_or_else(|| bad(self.undecodable()))?;
        let (min, max) = op.kind.arity();
        if op.inputs.len() < min || op.inputs.len() > max {
            return Err(bad("wrong number of inputs for this op"));
        }
        let y = self.operand(i, op.output, "output tensor id is out of range")?;
        if !y.in_arena {
            return Err(bad("output is a weight tensor"));
        }
        let mut x = [Operand::NONE; MAX_OP_INPUTS];
        let mut aliased = false;
        let mut all_f32 = y.dtype == DType::F32;
        for (slot, &id) in x.iter_mut().zip(op.inputs.iter()) {
            let t = self.operand(i, id, "input tensor id is out of range")?;
            if t.in_arena {
                let r = t.range;
                let alias = matches!(op.kind, OpKind::Reshape) && r == y.range;
                aliased |= alias;
                if r.0 < y.range.1 && y.range.0 < r.1 && !alias {
                    return Err(bad("output overlaps an input in the arena"));
                }
            }
            all_f32 &= t.dtype == DType::F32;
            *slot = t;
        }
        f(&OpTensors {
            n: op.inputs.len(),
            op,
            y,
            x,
            aliased,
            all_f32,
        })
    }

    /// Tensor `id` of op `i` as an [`Operand`] (`missing` says why when the id is out of range). Out of
    /// line: inlined twice into [`Model::with_op_tensors`] (its output and its inputs), it cost a
    /// firmware some 140 bytes of flash.
    #[inline(never)]
    fn operand(&self, i: usize, id: u32, missing: &'static str) -> Result<Operand, Error> {
        let bad = |reason| Error::BadOp {
            op: i as u32,
            reason,
        };
        let t = self.tensor(id as usize).ok_or(bad(missing))?;
        let (offset, in_arena) = match t.storage {
            Storage::Weights { offset } => (offset as usize, false),
            Storage::Arena { offset } => (offset as usize, true),
        };
        let size = byte_size(t.dtype, &t.dims).ok_or(bad("tensor byte size overflows"))?;
        Ok(Operand {
            dtype: t.dtype,
            dims: UDims::of(&t.dims),
            range: (offset, offset.saturating_add(size as usize)),
            in_arena,
        })
    }

    /// Why an op record that does not decode was refused.
    fn undecodable(&self) -> &'static str {
        if self.minor < 2 {
            // Format 1.2 appended the rounding mode to the int8 ops' parameters.
            "record does not decode (a blob of format 1.1 or older: int8 ops need reconverting with this \
             version of ember convert)"
        } else if E != family::ALL {
            "record does not decode, or this build of the runtime leaves out this op kind \
             (Model::parse_only)"
        } else {
            "record does not decode"
        }
    }
}
