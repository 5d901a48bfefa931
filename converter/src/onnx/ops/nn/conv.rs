//! ONNX `Conv` (2-D only) to [`Op::Conv2d`] in NCHW form; the layout pass later moves it to NHWC and
//! its weights from OIHW to OHWI.

use ember_core::ops::math::activation::Activation;

use crate::ir::op::Conv2d;
use crate::ir::{Op, SpatialLayout};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::window;
use crate::ConvertError;

/// Imports `Conv`: inputs `X [N, C, H, W]`, constant `W [M, C/group, KH, KW]`, optional constant `B [M]`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let w = ctx.input(1, "W")?;
    let b = ctx.opt_input(2)?;
    let xs = ctx.shape(x);
    let ws = ctx.shape(w);
    if xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only 2-D convolution (rank-4 input) is supported"
        )));
    }
    if ctx.const_f32(w).is_none() {
        return Err(ctx.err(format!(
            "weights W (\"{}\") must be a FLOAT initializer or constant",
            ctx.graph().tensor(w).name
        )));
    }
    if ws.len() != 4 {
        return Err(ctx.err(format!(
            "weights W have shape {ws:?}; expected [M, C/group, KH, KW]"
        )));
    }
    if let Some(b) = b {
        if ctx.const_f32(b).is_none() {
            return Err(ctx.err(format!(
                "bias B (\"{}\") must be a FLOAT initializer or constant",
                ctx.graph().tensor(b).name
            )));
        }
    }
    let kernel = [ws[2], ws[3]];
    if let Some(k) = ctx.attr_sizes("kernel_shape", 1)? {
        if k != kernel {
            return Err(ctx.err(format!(
                "attribute kernel_shape={k:?} does not match the weights' kernel {kernel:?}"
            )));
        }
    }
    let group = ctx.attr_int("group")?.unwrap_or(1);
    let groups = usize::try_from(group)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| ctx.err(format!("attribute group={group} must be at least 1")))?;
    let win = window::resolve(ctx, [xs[2], xs[3]], kernel)?;
    let op = Op::Conv2d(Conv2d {
        strides: win.strides,
        dilations: win.dilations,
        pads: win.pads,
        groups,
        act: Activation::None,
        layout: SpatialLayout::Nchw,
    });
    let mut inputs = vec![x, w];
    inputs.extend(b);
    ctx.emit(op, inputs)?;
    Ok(())
}
