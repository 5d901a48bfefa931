//! Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (2-D, imported in NCHW form; the
//! layout pass moves them to NHWC; 1-D ones run as 2-D with H = 1).

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/onnx/ops/pool");

use crate::ir::{Op, Pool2d, SpatialLayout, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::window;
use crate::ConvertError;

/// Reads the window attributes shared by MaxPool and AveragePool for input `x` (rank 4, or rank 3
/// for 1-D pooling, whose window is then `[1, K]` over the data viewed as `[N, C, 1, L]`).
pub(crate) fn window_of(
    ctx: &NodeCtx<'_>,
    xs: &[usize],
    count_include_pad: bool,
) -> Result<Pool2d, ConvertError> {
    if xs.len() != 3 && xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only 1-D and 2-D pooling (rank-3 or rank-4 input) is supported"
        )));
    }
    let one_d = xs.len() == 3;
    let k = ctx
        .attr_sizes("kernel_shape", 1)?
        .ok_or_else(|| ctx.err("attribute kernel_shape is required"))?;
    let (kernel, hw, win) = if one_d {
        let [k] = <[usize; 1]>::try_from(k.as_slice()).map_err(|_| {
            ctx.err(format!(
                "attribute kernel_shape={k:?} must have 1 value (the input is 1-D: [N, C, L])"
            ))
        })?;
        ([1, k], [1, xs[2]], window::resolve_1d(ctx, xs[2], k)?)
    } else {
        let kernel = <[usize; 2]>::try_from(k.as_slice())
            .map_err(|_| ctx.err(format!("attribute kernel_shape={k:?} must have 2 values")))?;
        let hw = [xs[2], xs[3]];
        (kernel, hw, window::resolve(ctx, hw, kernel)?)
    };
    if win.dilations != [1, 1] {
        return Err(ctx.err(format!(
            "attribute dilations={:?} is not supported; Ember's pooling has no dilation",
            &win.dilations[usize::from(one_d)..]
        )));
    }
    if ctx.attr_int("ceil_mode")?.unwrap_or(0) != 0 {
        window::check_ceil_mode(ctx, hw, kernel, &win)?;
    }
    let p = Pool2d {
        kernel,
        strides: win.strides,
        pads: win.pads,
        count_include_pad,
        layout: SpatialLayout::Nchw,
    };
    Ok(p)
}

/// Emits a MaxPool or AveragePool `op` of `x`; a 1-D one (rank-3 `x`) runs as the 2-D one between
/// two Reshapes, `[N, C, L]` to `[N, C, 1, L]` and back.
pub(crate) fn emit_pool(ctx: &mut NodeCtx<'_>, op: Op, x: TensorId) -> Result<(), ConvertError> {
    let xs = ctx.shape(x);
    if xs.len() != 3 {
        ctx.emit(op, vec![x])?;
        return Ok(());
    }
    let shape = vec![xs[0], xs[1], 1, xs[2]];
    let x2 = ctx.emit_tmp("as_2d", Op::Reshape { shape }, vec![x])?;
    let y2 = ctx.emit_tmp("pool_2d", op, vec![x2])?;
    let ys = ctx.shape(y2);
    let shape = vec![ys[0], ys[1], ys[3]];
    ctx.emit(Op::Reshape { shape }, vec![y2])?;
    Ok(())
}
