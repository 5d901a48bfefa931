//! ONNX `Conv` (1-D and 2-D) to [`Op::Conv2d`] in NCHW form; the layout pass later moves it to NHWC
//! and its weights from OIHW to OHWI.
//!
//! A 1-D convolution (`X [N, C, L]`, `W [M, C/group, K]`) runs as the 2-D one over `[N, C, 1, L]`:
//! a Reshape in front of the input, weights reshaped to `[M, C/group, 1, K]` at conversion time, the
//! window `[1, K]` with strides `[1, s]`, dilations `[1, d]` and pads `[0, begin, 0, end]`, and a
//! Reshape of the output back to `[N, M, L']`.

use ember_core::ops::math::activation::Activation;

use crate::ir::op::Conv2d;
use crate::ir::{Op, SpatialLayout};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::window;
use crate::ConvertError;

/// Imports `Conv`: inputs `X [N, C, H, W]` (or `[N, C, L]`), constant `W [M, C/group, KH, KW]` (or
/// `[M, C/group, K]`), optional constant `B [M]`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let w = ctx.input(1, "W")?;
    let b = ctx.opt_input(2)?;
    let xs = ctx.shape(x);
    let ws = ctx.shape(w);
    if xs.len() != 3 && xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only 1-D and 2-D convolution (rank-3 or rank-4 input) is \
             supported"
        )));
    }
    let one_d = xs.len() == 3;
    if ctx.const_f32(w).is_none() {
        return Err(ctx.err(format!(
            "weights W (\"{}\") must be a FLOAT initializer or constant",
            ctx.graph().tensor(w).name
        )));
    }
    if ws.len() != xs.len() {
        let want = if one_d {
            "[M, C/group, K] (1-D convolution)"
        } else {
            "[M, C/group, KH, KW]"
        };
        return Err(ctx.err(format!("weights W have shape {ws:?}; expected {want}")));
    }
    if let Some(b) = b {
        if ctx.const_f32(b).is_none() {
            return Err(ctx.err(format!(
                "bias B (\"{}\") must be a FLOAT initializer or constant",
                ctx.graph().tensor(b).name
            )));
        }
    }
    let kernel = &ws[2..];
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
    let win = if one_d {
        window::resolve_1d(ctx, xs[2], ws[2])?
    } else {
        window::resolve(ctx, [xs[2], xs[3]], [ws[2], ws[3]])?
    };
    let op = Op::Conv2d(Conv2d {
        strides: win.strides,
        dilations: win.dilations,
        pads: win.pads,
        groups,
        act: Activation::None,
        layout: SpatialLayout::Nchw,
    });
    if !one_d {
        let mut inputs = vec![x, w];
        inputs.extend(b);
        ctx.emit(op, inputs)?;
        return Ok(());
    }
    let x2 = ctx.emit_tmp(
        "as_2d",
        Op::Reshape {
            shape: vec![xs[0], xs[1], 1, xs[2]],
        },
        vec![x],
    )?;
    // A Reshape of a constant is folded: the weights stay a constant.
    let w2 = ctx.emit_tmp(
        "weights_2d",
        Op::Reshape {
            shape: vec![ws[0], ws[1], 1, ws[2]],
        },
        vec![w],
    )?;
    let mut inputs = vec![x2, w2];
    inputs.extend(b);
    let y2 = ctx.emit_tmp("conv_2d", op, inputs)?;
    let ys = ctx.shape(y2);
    let y = ctx.emit(
        Op::Reshape {
            shape: vec![ys[0], ys[1], ys[3]],
        },
        vec![y2],
    )?;
    // The convolution carries the ONNX node's name (fused names read `conv+relu`).
    let name = ctx.name.clone();
    for n in ctx.imp.graph.nodes.iter_mut().rev().take(2) {
        n.name = if n.output == y {
            format!("{name}.as_1d")
        } else {
            name.clone()
        };
    }
    Ok(())
}
