//! ONNX `Conv` (1-D and 2-D) to [`Op::Conv2d`] in NCHW form; the layout pass later moves it to NHWC
//! and its weights from OIHW to OHWI.
//!
//! A 1-D convolution (`X [N, C, L]`, `W [M, C/group, K]`) runs as the 2-D one over `[N, C, 1, L]`:
//! a Reshape in front of the input, weights reshaped to `[M, C/group, 1, K]` at conversion time, the
//! window `[1, K]` with strides `[1, s]`, dilations `[1, d]` and pads `[0, begin, 0, end]`, and a
//! Reshape of the output back to `[N, M, L']`.

use ember_core::ops::math::activation::Activation;

use crate::ir::op::Conv2d;
use crate::ir::{Op, SpatialLayout, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::window;
use crate::ConvertError;

/// Imports `Conv`: inputs `X [N, C, H, W]` (or `[N, C, L]`), constant `W [M, C/group, KH, KW]` (or
/// `[M, C/group, K]`), optional constant `B [M]`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let (x, w, b, xs, ws) = inputs(ctx, "convolution")?;
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
    let op = conv_op(ctx, &xs, &ws)?;
    if !one_d {
        ctx.emit(op, [x, w].into_iter().chain(b).collect())?;
        return Ok(());
    }
    let x2 = reshape_to_2d(ctx, "as_2d", x)?;
    // A Reshape of a constant is folded: the weights stay a constant.
    let w2 = reshape_to_2d(ctx, "weights_2d", w)?;
    let inputs = [x2, w2].into_iter().chain(b).collect();
    emit_1d_as_2d(ctx, "conv_2d", op, inputs)
}

/// The inputs `X`, `W` and optional `B` of a 1-D or 2-D `what` (`Conv`, `ConvTranspose`) with the
/// shapes of `X` and `W`, checking that `X` has rank 3 or 4.
pub(super) type Inputs = (TensorId, TensorId, Option<TensorId>, Vec<usize>, Vec<usize>);

/// Reads the [`Inputs`] of a convolution `what` (named in the error for an input of another rank).
pub(super) fn inputs(ctx: &NodeCtx<'_>, what: &str) -> Result<Inputs, ConvertError> {
    let x = ctx.input(0, "X")?;
    let w = ctx.input(1, "W")?;
    let b = ctx.opt_input(2)?;
    let xs = ctx.shape(x);
    let ws = ctx.shape(w);
    if xs.len() != 3 && xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only 1-D and 2-D {what} (rank-3 or rank-4 input) is supported"
        )));
    }
    Ok((x, w, b, xs, ws))
}

/// Reads `kernel_shape` (checked against the weights' kernel `ws[2..]`) and `group`, resolves the
/// window and gives the NCHW [`Op::Conv2d`] over an input of shape `xs`: 1-D when `xs` has rank 3,
/// as the 2-D convolution with H = 1. Shared by `Conv`, `ConvInteger` and `QLinearConv`.
pub(crate) fn conv_op(
    ctx: &mut NodeCtx<'_>,
    xs: &[usize],
    ws: &[usize],
) -> Result<Op, ConvertError> {
    let kernel = &ws[2..];
    if let Some(k) = ctx.attr_sizes("kernel_shape", 1)? {
        if k != kernel {
            return Err(ctx.err(format!(
                "attribute kernel_shape={k:?} does not match the weights' kernel {kernel:?}"
            )));
        }
    }
    let groups = groups(ctx)?;
    let win = if xs.len() == 3 {
        window::resolve_1d(ctx, xs[2], ws[2])?
    } else {
        window::resolve(ctx, [xs[2], xs[3]], [ws[2], ws[3]])?
    };
    Ok(Op::Conv2d(Conv2d {
        strides: win.strides,
        dilations: win.dilations,
        pads: win.pads,
        groups,
        act: Activation::None,
        layout: SpatialLayout::Nchw,
    }))
}

/// The attribute `group` (default 1) of a convolution, at least 1.
pub(crate) fn groups(ctx: &NodeCtx<'_>) -> Result<usize, ConvertError> {
    let group = ctx.attr_int("group")?.unwrap_or(1);
    usize::try_from(group)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| ctx.err(format!("attribute group={group} must be at least 1")))
}

/// Reshapes the rank-3 `v` (`[N, C, L]`) to `[N, C, 1, L]`, as a temporary named `what`.
pub(super) fn reshape_to_2d(
    ctx: &mut NodeCtx<'_>,
    what: &str,
    v: TensorId,
) -> Result<TensorId, ConvertError> {
    let s = ctx.shape(v);
    ctx.emit_tmp(
        what,
        Op::Reshape {
            shape: vec![s[0], s[1], 1, s[2]],
        },
        vec![v],
    )
}

/// Emits the 2-D convolution `op` (a temporary named `what`) over `inputs` (the reshaped input,
/// weights and bias, if any), and the Reshape of its `[N, M, 1, L']` result back to `[N, M, L']` as the
/// node's output. The convolution carries the ONNX node's name (fused names read `conv+relu`), the
/// Reshape that name with `.as_1d`.
pub(super) fn emit_1d_as_2d(
    ctx: &mut NodeCtx<'_>,
    what: &str,
    op: Op,
    inputs: Vec<TensorId>,
) -> Result<(), ConvertError> {
    let y2 = ctx.emit_tmp(what, op, inputs)?;
    let ys = ctx.shape(y2);
    let y = ctx.emit(
        Op::Reshape {
            shape: vec![ys[0], ys[1], ys[3]],
        },
        vec![y2],
    )?;
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
