//! ONNX `Clip`: bounds from constant inputs (opset >= 11) or attributes (older). `Clip(0, 6)` becomes
//! Relu6 and `Clip(0, +inf)` Relu; other bounds a general Clip.

use ember_core::ops::math::unary::UnaryOp;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Clip`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let (min, max) = if ctx.opset >= 11 {
        let min = match ctx.opt_input(1)? {
            Some(t) => ctx.const_scalar(t, "min")?,
            None => f32::NEG_INFINITY,
        };
        let max = match ctx.opt_input(2)? {
            Some(t) => ctx.const_scalar(t, "max")?,
            None => f32::INFINITY,
        };
        (min, max)
    } else {
        let min = ctx.attr_float("min")?.unwrap_or(f32::NEG_INFINITY);
        let max = ctx.attr_float("max")?.unwrap_or(f32::INFINITY);
        (min, max)
    };
    if min.is_nan() || max.is_nan() {
        return Err(ctx.err("min and max must not be NaN"));
    }
    ctx.emit(Op::Unary(clip_op(min, max)), vec![x])?;
    Ok(())
}

/// The unary op for `clamp(x, min, max)`: Relu, Relu6, or a general Clip.
pub fn clip_op(min: f32, max: f32) -> UnaryOp {
    // f32::MAX counts as unbounded: it is the default of the attribute form.
    let unbounded = max >= f32::MAX;
    if min == 0.0 && unbounded {
        UnaryOp::Relu
    } else if min == 0.0 && max == 6.0 {
        UnaryOp::Relu6
    } else {
        UnaryOp::Clip { min, max }
    }
}
