//! ONNX `DequantizeLinear` (opset 10 and later): `y = (x - x_zero_point) * x_scale`, per tensor or
//! per axis (`axis`, default 1), of int8, uint8, int16, uint16 or int32 values, to FLOAT
//! (`output_dtype`, from opset 23, must be FLOAT or absent); blocked quantization (`block_size`) is
//! rejected. See [`super::dequantize`] for the three ways it is imported.

use crate::onnx::node::NodeCtx;
use crate::onnx::proto::data_type;
use crate::ConvertError;

/// Imports `DequantizeLinear`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "x")?;
    let scale = ctx.input(1, "x_scale")?;
    let zp = ctx.opt_input(2)?;
    let rank = ctx.shape(x).len();
    let axis = super::axis_attr(ctx, rank)?;
    match ctx.attr_int("output_dtype")?.unwrap_or(0) {
        0 => {}
        t if t == i64::from(data_type::FLOAT) => {}
        t => {
            let name = i32::try_from(t).map_or("unknown", data_type::name);
            return Err(ctx.err(format!(
                "attribute output_dtype={t} ({name}) is not supported; Ember dequantizes to FLOAT"
            )));
        }
    }
    let y = super::dequantize(ctx, x, scale, zp, axis, "x")?;
    ctx.finish(y)
}
