//! Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (2-D, imported in NCHW form; the
//! layout pass moves them to NHWC).

pub mod avg_pool;
pub mod global_avg_pool;
pub mod global_max_pool;
pub mod max_pool;

use crate::ir::{Pool2d, SpatialLayout};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::window;
use crate::ConvertError;

/// Reads the window attributes shared by MaxPool and AveragePool for input `x` (rank 4).
pub(crate) fn window_of(
    ctx: &NodeCtx<'_>,
    xs: &[usize],
    count_include_pad: bool,
) -> Result<Pool2d, ConvertError> {
    if xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only 2-D pooling (rank-4 input) is supported"
        )));
    }
    let kernel = match ctx.attr_sizes("kernel_shape", 1)? {
        Some(k) => <[usize; 2]>::try_from(k.as_slice())
            .map_err(|_| ctx.err(format!("attribute kernel_shape={k:?} must have 2 values")))?,
        None => return Err(ctx.err("attribute kernel_shape is required")),
    };
    let hw = [xs[2], xs[3]];
    let win = window::resolve(ctx, hw, kernel)?;
    if win.dilations != [1, 1] {
        return Err(ctx.err(format!(
            "attribute dilations={:?} is not supported; Ember's pooling has no dilation",
            win.dilations
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
