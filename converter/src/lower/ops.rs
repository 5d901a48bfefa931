//! IR ops to the blob's closed [`OpKind`] enum, with parameters narrowed to the blob's integer widths.

use ember_core::ops::array::{concat::ConcatParams, pad::PadParams, transpose::TransposeParams};
use ember_core::ops::array::{gather::GatherParams, slice::SliceParams};
use ember_core::ops::math::{binary::BinaryParams, unary::UnaryParams};
use ember_core::ops::math::{cast::CastParams, compare::CompareParams, logical::LogicalParams};
use ember_core::ops::nn::arg_reduce::ArgReduceParams;
use ember_core::ops::nn::conv_transpose::ConvTranspose2dParams;
use ember_core::ops::nn::reduce::ReduceParams;
use ember_core::ops::nn::{
    conv::Conv2dParams, fully_connected::FullyConnectedParams, matmul::MatMulParams,
    softmax::SoftmaxParams,
};

use ember_core::ops::MAX_RANK;
use ember_core::OpKind;

use crate::ir::{Node, Op};
use crate::lower::narrow::{self, conv_params};
use crate::ConvertError;

/// The blob op for an IR node (which must be in Ember's layout).
pub fn lower_op(n: &Node) -> Result<OpKind, ConvertError> {
    let too_big = |what: &str, v: usize, max: usize| narrow::too_big(n, what, v, max);
    let u8_of =
        |what: &str, v: usize| u8::try_from(v).map_err(|_| too_big(what, v, u8::MAX.into()));
    Ok(match &n.op {
        Op::Conv2d(c) => OpKind::Conv2d(conv_params!(Conv2dParams, n, c, { act: c.act })),
        Op::ConvTranspose2d(c) => {
            OpKind::ConvTranspose2d(conv_params!(ConvTranspose2dParams, n, c, {
                output_pad_h: narrow::u16_of(n, "output padding", c.output_padding[0])?,
                output_pad_w: narrow::u16_of(n, "output padding", c.output_padding[1])?,
                act: c.act,
            }))
        }
        Op::FullyConnected { act } => OpKind::FullyConnected(FullyConnectedParams { act: *act }),
        Op::MatMul => OpKind::MatMul(MatMulParams {}),
        Op::Binary { op, act } => OpKind::Binary(BinaryParams { op: *op, act: *act }),
        Op::Unary(op) => OpKind::Unary(UnaryParams { op: *op }),
        Op::Softmax { axis } => OpKind::Softmax(SoftmaxParams {
            axis: u8_of("axis", *axis)?,
        }),
        Op::MaxPool(p) => OpKind::MaxPool2d(narrow::pool(n, p)?),
        Op::AvgPool(p) => OpKind::AvgPool2d(narrow::pool(n, p)?),
        Op::GlobalAvgPool { layout } => {
            narrow::nhwc(n, *layout)?;
            OpKind::GlobalAvgPool
        }
        Op::Concat { axis } => OpKind::Concat(ConcatParams {
            axis: u8_of("axis", *axis)?,
        }),
        Op::Transpose { perm } => {
            if perm.len() > MAX_RANK {
                return Err(too_big("rank", perm.len(), MAX_RANK));
            }
            // Entries past the rank do not count; they are filled with the identity.
            let mut p: [u8; MAX_RANK] = core::array::from_fn(|i| i as u8);
            for (slot, &v) in p.iter_mut().zip(perm) {
                *slot = u8_of("axis", v)?;
            }
            OpKind::Transpose(TransposeParams { perm: p })
        }
        Op::Pad {
            before,
            after,
            value,
        } => {
            if before.len() > MAX_RANK {
                return Err(too_big("rank", before.len(), MAX_RANK));
            }
            let mut params = PadParams {
                before: [0; MAX_RANK],
                after: [0; MAX_RANK],
                value: *value,
            };
            for i in 0..before.len() {
                params.before[i] = u32::try_from(before[i])
                    .map_err(|_| too_big("padding", before[i], u32::MAX as usize))?;
                params.after[i] = u32::try_from(after[i])
                    .map_err(|_| too_big("padding", after[i], u32::MAX as usize))?;
            }
            OpKind::Pad(params)
        }
        Op::Reshape { .. } => OpKind::Reshape,
        Op::LogSoftmax { axis } => OpKind::LogSoftmax(SoftmaxParams {
            axis: u8_of("axis", *axis)?,
        }),
        Op::Reduce { op, axes, keepdims } => {
            let mut mask = 0u8;
            for &a in axes {
                if a >= MAX_RANK {
                    return Err(too_big("axis", a, MAX_RANK - 1));
                }
                mask |= 1 << a;
            }
            OpKind::Reduce(ReduceParams {
                op: *op,
                axes: mask,
                keepdims: *keepdims,
            })
        }
        Op::Core(kind) => *kind,
        Op::Control(_) | Op::ControlOutput { .. } => {
            return Err(ConvertError::internal(format!(
            "node \"{}\": control flow reached lowering unexpanded (lower::control lays it out)",
            n.name
        )))
        }
        Op::BatchNorm { .. } => {
            return Err(ConvertError::internal(format!(
                "node \"{}\": BatchNorm reached lowering (the fold_batch_norm pass rewrites it)",
                n.name
            )))
        }
        Op::Slice(sl) => {
            if sl.start.len() > MAX_RANK {
                return Err(too_big("rank", sl.start.len(), MAX_RANK));
            }
            let mut p = SliceParams {
                start: [0; MAX_RANK],
                step: [1; MAX_RANK],
            };
            for (i, (&start, &step)) in sl.start.iter().zip(&sl.step).enumerate() {
                p.start[i] = u32::try_from(start)
                    .map_err(|_| too_big("slice start", start, u32::MAX as usize))?;
                p.step[i] = i32::try_from(step).map_err(|_| {
                    too_big(
                        "slice step",
                        step.unsigned_abs() as usize,
                        i32::MAX as usize,
                    )
                })?;
            }
            OpKind::Slice(p)
        }
        Op::Gather { axis } => OpKind::Gather(GatherParams {
            axis: u8_of("axis", *axis)?,
        }),
        Op::Broadcast { .. } => OpKind::Broadcast,
        Op::Resize(r) => OpKind::Resize(r.params),
        Op::Compare(op) => OpKind::Compare(CompareParams { op: *op }),
        Op::Logical(op) => OpKind::Logical(LogicalParams { op: *op }),
        Op::Not => OpKind::Not,
        Op::Where => OpKind::Where,
        Op::Cast { to } => OpKind::Cast(CastParams { to: *to }),
        Op::Quant(q) => return super::quant::lower(n, q),
        Op::FullyConnectedW8 { act } => {
            OpKind::FullyConnectedW8(FullyConnectedParams { act: *act })
        }
        Op::Embedding => OpKind::Embedding,
        Op::ArgReduce {
            max,
            axis,
            keepdims,
            select_last_index,
        } => OpKind::ArgReduce(ArgReduceParams {
            max: *max,
            axis: u8_of("axis", *axis)?,
            keepdims: *keepdims,
            select_last_index: *select_last_index,
        }),
    })
}
