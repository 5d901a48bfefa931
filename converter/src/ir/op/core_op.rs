//! [`Op::Core`](super::Op::Core): an op carried as the blob's own kind. Its output's dims and dtype
//! are the runtime's inference (`ember_core::model::infer_dims` and `infer_dtype`, beside the op's
//! kernel), and its checks are the runtime's validation (`ember_core::model::validate_op`, what
//! `Model::parse` runs), so the converter holds nothing of its own about such an op.

use ember_core::ops::entry::{NotAWeight, Operands};
use ember_core::OpKind;

use super::{DType, Op};

/// The output's dtype of `kind` for inputs of these dtypes.
pub fn infer_dtype(kind: &OpKind, x: &[DType]) -> Result<DType, String> {
    ember_core::model::infer_dtype(kind, x).map_err(str::to_string)
}

/// The output's dims of `kind` for inputs of these dims (their count checked against the kind's).
pub fn infer(kind: &OpKind, x: &[&[usize]]) -> Result<Vec<usize>, String> {
    let (min, max) = kind.arity();
    crate::ir::shape::arity(x.len(), min, max)?;
    let dims = ember_core::model::infer_dims(kind, x).map_err(str::to_string)?;
    Ok(dims.to_vec())
}

/// Runs the runtime's validation of an [`Op::Core`] node on the dims and dtypes of its inputs and
/// output; other ops pass (theirs runs when they are lowered). The values of weights are not known
/// here: the lowering's check, which runs the same validation on the records it writes, reads them.
pub fn validate(
    op: &Op,
    x: &[&[usize]],
    dtypes: &[DType],
    y: &[usize],
    y_dtype: DType,
) -> Result<(), String> {
    let Op::Core(kind) = op else {
        return Ok(());
    };
    let operands = ShapeOperands {
        x,
        dtypes,
        y,
        y_dtype,
    };
    ember_core::model::validate_op(kind, &operands).map_err(str::to_string)
}

/// An op's tensors as dims and dtypes, without values.
struct ShapeOperands<'a> {
    x: &'a [&'a [usize]],
    dtypes: &'a [DType],
    y: &'a [usize],
    y_dtype: DType,
}

impl Operands for ShapeOperands<'_> {
    fn count(&self) -> usize {
        self.x.len()
    }

    fn dims(&self, k: usize) -> &[usize] {
        self.x.get(k).copied().unwrap_or(&[])
    }

    fn dtype(&self, k: usize) -> DType {
        self.dtypes.get(k).copied().unwrap_or(DType::F32)
    }

    fn out_dims(&self) -> &[usize] {
        self.y
    }

    fn out_dtype(&self) -> DType {
        self.y_dtype
    }

    fn all_f32(&self) -> bool {
        self.y_dtype == DType::F32 && self.dtypes.iter().all(|&t| t == DType::F32)
    }

    fn weight(&self, _k: usize) -> Result<&[u8], NotAWeight> {
        Err(NotAWeight::InArena)
    }
}

#[cfg(test)]
mod tests {
    use ember_core::ops::nn::layer_norm::LayerNormParams;
    use ember_core::ops::nn::softmax::SoftmaxParams;

    use super::*;

    const LAYER_NORM: OpKind = OpKind::LayerNorm(LayerNormParams {
        axis: 1,
        epsilon: 1e-5,
    });

    #[test]
    fn a_core_op_is_inferred_and_checked_by_the_runtime() {
        let (x, scale): (&[usize], &[usize]) = (&[2, 3, 4], &[3, 4]);
        assert_eq!(infer(&LAYER_NORM, &[x, scale]), Ok(vec![2, 3, 4]));
        assert_eq!(infer_dtype(&LAYER_NORM, &[DType::F32; 2]), Ok(DType::F32));
        let err = infer(&LAYER_NORM, &[x]).unwrap_err();
        assert!(err.contains("2 to 3") && err.contains("got 1"), "{err}");
        let op = Op::Core(LAYER_NORM);
        let f32s = [DType::F32; 2];
        assert_eq!(validate(&op, &[x, scale], &f32s, x, DType::F32), Ok(()));
        // A scale that is not shaped x.dims[axis..], and an int32 input, are the runtime's errors.
        let err = validate(&op, &[x, &[4]], &f32s, x, DType::F32).unwrap_err();
        assert!(err.contains("scale"), "{err}");
        let ints = [DType::I32, DType::F32];
        assert!(validate(&op, &[x, scale], &ints, x, DType::F32).is_err());
    }

    #[test]
    fn a_kind_without_inference_says_so() {
        let softmax = OpKind::Softmax(SoftmaxParams { axis: 0 });
        let err = infer(&softmax, &[&[2]]).unwrap_err();
        assert!(err.contains("no shape inference"), "{err}");
    }
}
