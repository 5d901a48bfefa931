//! ONNX `QuantizeLinear` (opsets 10 to 21): `y = saturate(rint(x / y_scale) + y_zero_point)` of a
//! FLOAT `x`, per tensor or per axis (`axis`, default 1), to int8, uint8, int16 or uint16 (the zero
//! point's type, else `output_dtype`, else uint8). Rounding is half to even, as ONNX specifies;
//! `block_size` is rejected. See [`super::quantize`] for how it is imported.

use crate::ir::DType;
use crate::onnx::node::NodeCtx;
use crate::onnx::tensor::dtype_of;
use crate::ConvertError;

/// Imports `QuantizeLinear`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "x")?;
    let scale = ctx.input(1, "y_scale")?;
    let zp = ctx.opt_input(2)?;
    let dtype = match zp {
        Some(z) => ctx.graph().tensor(z).dtype,
        None => match ctx.attr_int("output_dtype")?.unwrap_or(0) {
            0 => DType::U8,
            t => i32::try_from(t)
                .ok()
                .and_then(dtype_of)
                .ok_or_else(|| ctx.err(format!("output_dtype {t} is not supported")))?,
        },
    };
    let rank = ctx.shape(x).len();
    let axis = super::axis_attr(ctx, rank)?;
    let y = super::quantize(ctx, x, scale, zp, dtype, axis)?;
    ctx.finish(y)
}
