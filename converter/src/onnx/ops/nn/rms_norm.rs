//! ONNX `RMSNormalization` (opset 23) to the blob's [`OpKind::RmsNorm`], carried as it is
//! ([`Op::Core`]): `axis` (default -1), `epsilon` (default 1e-5), and `scale` broadcastable to
//! `X.shape[axis..]` (a constant scale is expanded to that shape at conversion time; a computed one
//! must have it already). `stash_type` must be 1 (FLOAT, the default): Ember computes in f32.

use ember_core::ops::nn::rms_norm::RmsNormParams;
use ember_core::OpKind;

use super::layer_norm::{attributes, expand_to};
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `RMSNormalization`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let scale = ctx.input(1, "scale")?;
    let xs = ctx.shape(x);
    let (axis, epsilon) = attributes(ctx, xs.len())?;
    let scale = expand_to(ctx, scale, &xs[axis..], "scale")?;
    let axis = u8::try_from(axis).map_err(|_| ctx.err(format!("axis {axis} is too large")))?;
    let op = Op::Core(OpKind::RmsNorm(RmsNormParams { axis, epsilon }));
    ctx.emit(op, vec![x, scale])?;
    Ok(())
}
