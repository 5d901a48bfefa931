//! ONNX `Clip`: bounds from constant inputs (opset >= 11) or attributes (older). `Clip(0, 6)` becomes
//! Relu6 and `Clip(0, +inf)` Relu; other bounds a general Clip. A bound computed at run time (a
//! log-mel front end clips to its maximum minus 80 dB) becomes a broadcasting `Max` (for `min`) or
//! `Min` (for `max`) with that scalar, in ONNX's order: the lower bound first.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;

use crate::ir::{Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Clip`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    // Bounds known only at run time, applied after the constant ones.
    let mut runtime: Vec<(BinaryOp, TensorId)> = Vec::new();
    let (min, max) = if ctx.opset >= 11 {
        let mut bound = |i: usize, name: &str, op: BinaryOp, none: f32| {
            let Some(t) = ctx.opt_input(i)? else {
                return Ok(none);
            };
            if ctx.graph().is_const(t) {
                return ctx.const_scalar(t, name);
            }
            if ctx.shape(t).iter().product::<usize>() != 1 {
                return Err(ctx.err(format!(
                    "{name} has shape {:?}; Clip's bounds are scalars",
                    ctx.shape(t)
                )));
            }
            runtime.push((op, t));
            Ok(none)
        };
        let min = bound(1, "min", BinaryOp::Max, f32::NEG_INFINITY)?;
        let max = bound(2, "max", BinaryOp::Min, f32::INFINITY)?;
        (min, max)
    } else {
        let min = ctx.attr_float("min")?.unwrap_or(f32::NEG_INFINITY);
        let max = ctx.attr_float("max")?.unwrap_or(f32::INFINITY);
        (min, max)
    };
    if min.is_nan() || max.is_nan() {
        return Err(ctx.err("min and max must not be NaN"));
    }
    if runtime.is_empty() {
        ctx.emit(Op::Unary(clip_op(min, max)), vec![x])?;
        return Ok(());
    }
    // ONNX applies the lower bound, then the upper (so `min > max` gives `max` everywhere).
    let mut acc = x;
    for (op, fixed) in [(BinaryOp::Max, min), (BinaryOp::Min, max)] {
        if let Some(&(_, bound)) = runtime.iter().find(|(o, _)| *o == op) {
            let binary = Op::Binary {
                op,
                act: Activation::None,
            };
            acc = ctx.emit_tmp(op.name(), binary, vec![acc, bound])?;
        } else if fixed.is_finite() {
            let (lo, hi) = match op {
                BinaryOp::Max => (fixed, f32::INFINITY),
                _ => (f32::NEG_INFINITY, fixed),
            };
            acc = ctx.emit_tmp("clip", Op::Unary(clip_op(lo, hi)), vec![acc])?;
        }
    }
    ctx.finish(acc)
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
