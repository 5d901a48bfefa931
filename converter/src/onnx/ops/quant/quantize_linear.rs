//! ONNX `QuantizeLinear` (opset 10 and later): `y = saturate(rint(x / y_scale) + y_zero_point)` of a
//! FLOAT `x`, per tensor or per axis (`axis`, default 1), to int8, uint8, int16 or uint16 (the zero
//! point's type, which `output_dtype` must then match, else `output_dtype`, else uint8). Rounding is
//! half to even, as ONNX specifies; `block_size` and opset 23's `precision` are rejected. See
//! [`super::quantize`] for how it is imported.

use crate::ir::DType;
use crate::onnx::node::NodeCtx;
use crate::onnx::tensor::dtype_of;
use crate::ConvertError;

/// Imports `QuantizeLinear`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "x")?;
    let scale = ctx.input(1, "y_scale")?;
    let zp = ctx.opt_input(2)?;
    let output_dtype = match ctx.attr_int("output_dtype")?.unwrap_or(0) {
        0 => None,
        t => Some(
            i32::try_from(t)
                .ok()
                .and_then(dtype_of)
                .ok_or_else(|| ctx.err(format!("output_dtype {t} is not supported")))?,
        ),
    };
    let dtype = match (zp, output_dtype) {
        (Some(z), given) => {
            let d = ctx.graph().tensor(z).dtype;
            if given.is_some_and(|g| g != d) {
                return Err(ctx.err(format!(
                    "attribute output_dtype differs from the type of y_zero_point ({})",
                    d.name()
                )));
            }
            d
        }
        (None, given) => given.unwrap_or(DType::U8),
    };
    let rank = ctx.shape(x).len();
    let axis = super::axis_attr(ctx, rank)?;
    let y = super::quantize(ctx, x, scale, zp, dtype, axis)?;
    ctx.finish(y)
}
