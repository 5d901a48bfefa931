//! Checks of the lowered records, run on every conversion (they are cheap): every weight lies inside
//! the weights section and is aligned; no op's output bytes overlap the arena bytes of one of its
//! inputs, except a Reshape whose output aliases its input exactly; and every op passes the runtime's
//! own validation (the one `Model::parse` runs), so a blob the converter writes is one it accepts.

use std::cell::OnceCell;

use ember_core::format::{Storage, TensorRecord, ALIGN};
use ember_core::ops::entry::{NotAWeight, Operands};
use ember_core::{AlignedBuf, DType, OpKind};

use super::Lowered;
use crate::ConvertError;

fn bytes(t: &TensorRecord) -> usize {
    t.dims.iter().map(|&d| d as usize).product::<usize>() * t.dtype.size()
}

/// Runs the checks; a failure is a converter bug, reported as [`ConvertError::Internal`].
pub fn check(l: &Lowered) -> Result<(), ConvertError> {
    for (i, t) in l.tensors.iter().enumerate() {
        if let Storage::Weights { offset } = t.storage {
            let (start, end) = (offset as usize, offset as usize + bytes(t));
            if !start.is_multiple_of(ALIGN) || end > l.weights.len() {
                return Err(ConvertError::internal(format!(
                    "weight tensor {i} ({}) at [{start}, {end}) is misaligned or outside the {} \
                     weight bytes",
                    l.tensor_names[i],
                    l.weights.len()
                )));
            }
        }
    }
    let range = |id: u32| match l.tensors[id as usize].storage {
        Storage::Arena { offset } => {
            let start = offset as usize;
            Some((start, start + bytes(&l.tensors[id as usize])))
        }
        Storage::Weights { .. } => None,
    };
    let weights = OnceCell::new();
    for (step, op) in l.ops.iter().enumerate() {
        validate_op(l, step, &weights)?;
        let Some((os, oe)) = range(op.output) else {
            return Err(ConvertError::internal(format!(
                "op {step} ({}) writes into the weights",
                l.op_names[step]
            )));
        };
        for &input in &op.inputs {
            let Some((is, ie)) = range(input) else {
                continue;
            };
            let alias = matches!(op.kind, OpKind::Reshape) && (is, ie) == (os, oe);
            if !alias && is < oe && os < ie {
                return Err(ConvertError::internal(format!(
                    "op {step} ({}) writes [{os}, {oe}) over its input {} at [{is}, {ie})",
                    l.op_names[step], l.tensor_names[input as usize]
                )));
            }
        }
    }
    Ok(())
}

/// Runs the runtime's own validation of op `step` ([`ember_core::model::validate_op`], what
/// `Model::parse` runs on it): its dtypes, its shapes, and the weight values its kernel trusts.
fn validate_op(
    l: &Lowered,
    step: usize,
    weights: &OnceCell<AlignedBuf>,
) -> Result<(), ConvertError> {
    let op = &l.ops[step];
    let dims = |id: u32| -> Vec<usize> {
        l.tensors[id as usize]
            .dims
            .iter()
            .map(|&d| d as usize)
            .collect()
    };
    let operands = LoweredOperands {
        l,
        inputs: &op.inputs,
        dims: op.inputs.iter().map(|&i| dims(i)).collect(),
        y: dims(op.output),
        y_dtype: l.tensors[op.output as usize].dtype,
        weights,
    };
    ember_core::model::validate_op(&op.kind, &operands).map_err(|reason| {
        ConvertError::internal(format!(
            "op {step} ({}, {}) fails the runtime's check: {reason}",
            l.op_names[step],
            op.kind.name()
        ))
    })
}

/// A lowered op's tensors, as the runtime's validation reads them.
struct LoweredOperands<'l> {
    l: &'l Lowered,
    inputs: &'l [u32],
    dims: Vec<Vec<usize>>,
    y: Vec<usize>,
    y_dtype: DType,
    /// The weights section, copied to 16-byte-aligned memory the first time a check reads weight
    /// values (as the runtime reads them in place from an aligned blob).
    weights: &'l OnceCell<AlignedBuf>,
}

impl Operands for LoweredOperands<'_> {
    fn count(&self) -> usize {
        self.inputs.len()
    }

    fn dims(&self, k: usize) -> &[usize] {
        self.dims.get(k).map_or(&[], Vec::as_slice)
    }

    fn dtype(&self, k: usize) -> DType {
        self.inputs
            .get(k)
            .map_or(DType::F32, |&i| self.l.tensors[i as usize].dtype)
    }

    fn out_dims(&self) -> &[usize] {
        &self.y
    }

    fn out_dtype(&self) -> DType {
        self.y_dtype
    }

    fn all_f32(&self) -> bool {
        self.y_dtype == DType::F32 && (0..self.count()).all(|k| self.dtype(k) == DType::F32)
    }

    fn weight(&self, k: usize) -> Result<&[u8], NotAWeight> {
        // An input the op does not have reads as no bytes, as in the runtime.
        let Some(&id) = self.inputs.get(k) else {
            return Ok(&[]);
        };
        let t = &self.l.tensors[id as usize];
        match t.storage {
            Storage::Arena { .. } => Err(NotAWeight::InArena),
            Storage::Weights { offset } => {
                let weights = self
                    .weights
                    .get_or_init(|| AlignedBuf::from_bytes(&self.l.weights));
                let start = offset as usize;
                weights
                    .as_bytes()
                    .get(start..start + bytes(t))
                    .ok_or(NotAWeight::OutOfBounds)
            }
        }
    }
}
