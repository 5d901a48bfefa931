//! ONNX `ConstantOfShape`: a constant at conversion time (the shape input must be constant).

use crate::ir::{ConstData, DType};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::shape::bind_constant_of;

/// Most elements of the constant a ConstantOfShape makes (256 MiB of f32): a few bytes of model must
/// not make the converter allocate without bound.
const MAX_ELEMENTS: usize = 1 << 26;

/// Imports `ConstantOfShape`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let s = ctx.input(0, "input")?;
    let shape = ctx.const_sizes(s, "input shape")?;
    let n = crate::ir::shape::numel(&shape).map_err(|e| ctx.err(e))?;
    if n > MAX_ELEMENTS {
        return Err(ctx.err(format!(
            "the constant of shape {shape:?} would hold {n} elements; Ember makes constants of at most \
             {MAX_ELEMENTS} at conversion time (fix the shape input, or use --shape for a dynamic dim)"
        )));
    }
    let (data, dtype) = match ctx.attr_tensor("value")? {
        None => (ConstData::F32(vec![0.0; n]), DType::F32),
        Some((_, ConstData::F32(v), t)) if v.len() == 1 => (ConstData::F32(vec![v[0]; n]), t),
        Some((_, ConstData::I64(v), t)) if v.len() == 1 => (ConstData::I64(vec![v[0]; n]), t),
        Some((_, v, _)) => {
            return Err(ctx.err(format!(
                "attribute value must hold one element, it holds {}",
                v.len()
            )))
        }
    };
    bind_constant_of(ctx, shape, data, dtype)
}
