//! ONNX `DequantizeLinear` (opsets 10 to 21): `y = (x - x_zero_point) * x_scale`, per tensor or per
//! axis (`axis`, default 1), of int8, uint8, int16, uint16 or int32 values; blocked quantization
//! (`block_size`) is rejected. See [`super::dequantize`] for the three ways it is imported.

use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `DequantizeLinear`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "x")?;
    let scale = ctx.input(1, "x_scale")?;
    let zp = ctx.opt_input(2)?;
    let rank = ctx.shape(x).len();
    let axis = super::axis_attr(ctx, rank)?;
    let y = super::dequantize(ctx, x, scale, zp, axis, "x")?;
    ctx.finish(y)
}
