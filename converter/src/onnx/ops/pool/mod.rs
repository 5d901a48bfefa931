//! Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (2-D, imported in NCHW form; the
//! layout pass moves them to NHWC; 1-D ones run as 2-D with H = 1). `ceil_mode=1` is extra end
//! padding; dilated windows run as strided slices, one per tap (`dilated.rs`).

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/onnx/ops/pool");

use crate::ir::{Op, Pool2d, SpatialLayout, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::window;
use crate::ConvertError;

/// A MaxPool or AveragePool window as read from the node's attributes.
pub(crate) struct PoolWindow {
    /// Kernel, strides and padding (the explicit pads plus `ceil_extra` at the end), NCHW.
    pub pool: Pool2d,
    /// `[h, w]`: the end padding `ceil_mode=1` added, so that Ember's pooling (which rounds the output
    /// size down) gives the rounded-up size (see [`window::ceil_mode_pads`]).
    pub ceil_extra: [usize; 2],
    /// `[h, w]`; with any above 1 the window runs as [`dilated`].
    pub dilations: [usize; 2],
}

impl PoolWindow {
    /// The pads of the ONNX node, without `ceil_extra`: `[top, left, bottom, right]`.
    pub fn explicit_pads(&self) -> [usize; 4] {
        let [top, left, bottom, right] = self.pool.pads;
        [
            top,
            left,
            bottom - self.ceil_extra[0],
            right - self.ceil_extra[1],
        ]
    }
}

/// Reads the window attributes shared by MaxPool and AveragePool for input `x` (rank 4, or rank 3
/// for 1-D pooling, whose window is then `[1, K]` over the data viewed as `[N, C, 1, L]`).
pub(crate) fn window_of(
    ctx: &NodeCtx<'_>,
    xs: &[usize],
    count_include_pad: bool,
) -> Result<PoolWindow, ConvertError> {
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
    let ceil_extra = if ctx.attr_int("ceil_mode")?.unwrap_or(0) != 0 {
        window::ceil_mode_pads(ctx, hw, kernel, &win)?
    } else {
        [0, 0]
    };
    let [top, left, bottom, right] = win.pads;
    let pool = Pool2d {
        kernel,
        strides: win.strides,
        pads: [top, left, bottom + ceil_extra[0], right + ceil_extra[1]],
        count_include_pad,
        layout: SpatialLayout::Nchw,
    };
    Ok(PoolWindow {
        pool,
        ceil_extra,
        dilations: win.dilations,
    })
}

/// Emits a MaxPool or AveragePool `op` of `x`, after padding `x` with zeros by `pre_pad` (`[top,
/// left, bottom, right]`) if given; a 1-D one (rank-3 `x`) runs as the 2-D one between two Reshapes,
/// `[N, C, L]` to `[N, C, 1, L]` and back.
pub(crate) fn emit_pool(
    ctx: &mut NodeCtx<'_>,
    op: Op,
    x: TensorId,
    pre_pad: Option<[usize; 4]>,
) -> Result<(), ConvertError> {
    emit_2d(ctx, x, |ctx, mut x| {
        if let Some([top, left, bottom, right]) = pre_pad {
            let pad = Op::Pad {
                before: vec![0, 0, top, left],
                after: vec![0, 0, bottom, right],
                value: 0.0,
            };
            x = ctx.emit_tmp("pad", pad, vec![x])?;
        }
        ctx.emit_tmp("pool_2d", op, vec![x])
    })
}

/// Runs `pool` (which emits temporary nodes) on `x` viewed as rank 4 (a rank-3 `x` reshaped to
/// `[N, C, 1, L]`, and the result back to `[N, C, L']`), and makes its last value the node's output.
pub(crate) fn emit_2d(
    ctx: &mut NodeCtx<'_>,
    x: TensorId,
    pool: impl FnOnce(&mut NodeCtx<'_>, TensorId) -> Result<TensorId, ConvertError>,
) -> Result<(), ConvertError> {
    let xs = ctx.shape(x);
    let one_d = xs.len() == 3;
    let mut x = x;
    if one_d {
        let shape = vec![xs[0], xs[1], 1, xs[2]];
        x = ctx.emit_tmp("as_2d", Op::Reshape { shape }, vec![x])?;
    }
    let mut y = pool(ctx, x)?;
    if one_d {
        let ys = ctx.shape(y);
        let shape = vec![ys[0], ys[1], ys[3]];
        y = ctx.emit_tmp("as_1d", Op::Reshape { shape }, vec![y])?;
    }
    ctx.finish(y)
}
