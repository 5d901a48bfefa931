//! Pooling over NHWC activations: max, average, and global average.

pub use crate::schema::Pool2dParams;

use crate::ops::shape::{dims_fit, require, sum3, Checked};
use crate::ops::{In, Out};

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/ops/pool");

/// Signature of a windowed pooling kernel (max and average).
pub type Pool2dFn = fn(&Pool2dParams, In<'_>, Out<'_>);

/// Checks the shape rules shared by max and average pooling (see [`max_pool::validate`]).
fn validate_window(p: &Pool2dParams, x: &[usize], y: &[usize]) -> Checked {
    dims_fit(x)?;
    dims_fit(y)?;
    require(x.len() == 4, "pool input is not [N, H, W, C]")?;
    require(y.len() == 4, "pool output is not [N, OH, OW, C]")?;
    require(
        p.kernel_h > 0 && p.kernel_w > 0,
        "pool window is empty (kernel 0)",
    )?;
    require(p.stride_h > 0 && p.stride_w > 0, "pool stride is zero")?;
    let out_h = output_len(x[1], p.kernel_h, p.stride_h, p.pad_top, p.pad_bottom)?;
    let out_w = output_len(x[2], p.kernel_w, p.stride_w, p.pad_left, p.pad_right)?;
    require(y[0] == x[0], "pool output batch differs from input batch")?;
    require(
        y[3] == x[3],
        "pool output channels differ from input channels",
    )?;
    require(
        y[1] == out_h && y[2] == out_w,
        "pool output H or W does not follow from window, stride and padding",
    )
}

/// Output length along one axis, `(size + before + after - k) / stride + 1`, after checking that the window
/// fits the padded input and that every window covers at least one input cell. Needs `k, stride > 0`.
fn output_len(size: usize, k: u16, stride: u16, before: u16, after: u16) -> Checked<usize> {
    let (k, stride, before) = (usize::from(k), usize::from(stride), usize::from(before));
    let padded = sum3(size, before, after.into())?;
    require(padded >= k, "pool window is larger than the padded input")?;
    let out = (padded - k) / stride + 1;
    // Windows move forward monotonically, so checking the first (its end) and the last (its start) covers
    // them all. `(out - 1) * stride <= padded - k` cannot overflow.
    require(
        size > 0 && before < k && (out - 1) * stride < size + before,
        "a pool window lies entirely in the padding",
    )?;
    Ok(out)
}

/// Input rows (or columns) `lo..hi` seen by the window of output row `o`; non-empty once validated.
#[inline]
fn window(o: usize, k: usize, stride: usize, pad_before: usize, size: usize) -> (usize, usize) {
    let start = o * stride;
    let lo = start.max(pad_before) - pad_before;
    let hi = (start + k).min(pad_before + size) - pad_before;
    (lo, hi)
}

/// The window walk of every pooling kernel (f32 and int8): for each output pixel `out` (its channels),
/// `visit(out, n, (y0, y1), (x0, x1))` with its batch index and the input rows `y0..y1` and columns
/// `x0..x1` its window covers (padding cells left out; non-empty once validated).
#[inline(always)]
pub(crate) fn for_each_window<T>(
    p: &Pool2dParams,
    x_dims: &[usize],
    y: Out<'_, T>,
    mut visit: impl FnMut(&mut [T], usize, (usize, usize), (usize, usize)),
) {
    let (batch, in_h, in_w, channels) = (x_dims[0], x_dims[1], x_dims[2], x_dims[3]);
    let (out_h, out_w) = (y.dims[1], y.dims[2]);
    if y.data.is_empty() {
        return;
    }
    let (k_h, k_w) = (usize::from(p.kernel_h), usize::from(p.kernel_w));
    let (stride_h, stride_w) = (usize::from(p.stride_h), usize::from(p.stride_w));
    let (pad_top, pad_left) = (usize::from(p.pad_top), usize::from(p.pad_left));
    let mut pixels = y.data.chunks_exact_mut(channels);
    for n in 0..batch {
        for oy in 0..out_h {
            let rows = window(oy, k_h, stride_h, pad_top, in_h);
            for ox in 0..out_w {
                let cols = window(ox, k_w, stride_w, pad_left, in_w);
                let Some(out) = pixels.next() else { return };
                visit(out, n, rows, cols);
            }
        }
    }
}

/// The loop shared by max and average pooling: for each output pixel, `init` each channel, fold every
/// valid input pixel of the window into it channel by channel with `combine`, then call
/// `finish(out_pixel, valid_cells)`. Padding cells are never visited.
#[inline(always)]
fn pool2d(
    p: &Pool2dParams,
    x: In<'_>,
    y: Out<'_>,
    init: f32,
    combine: impl Fn(f32, f32) -> f32,
    mut finish: impl FnMut(&mut [f32], usize),
) {
    let (in_h, in_w, channels) = (x.dims[1], x.dims[2], x.dims[3]);
    for_each_window(p, x.dims, y, |out, n, (y0, y1), (x0, x1)| {
        out.fill(init);
        for iy in y0..y1 {
            let row = ((n * in_h + iy) * in_w + x0) * channels;
            let cells = &x.data[row..][..(x1 - x0) * channels];
            for pixel in cells.chunks_exact(channels) {
                for (acc, &v) in out.iter_mut().zip(pixel) {
                    *acc = combine(*acc, v);
                }
            }
        }
        finish(out, (y1 - y0) * (x1 - x0));
    })
}
