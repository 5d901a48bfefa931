//! The window walk shared by the int8 pooling kernels.

use crate::ops::{In, Out};
use crate::schema::Pool2dParams;

/// Input rows (or columns) `lo..hi` seen by the window of output row `o`; non-empty once validated.
#[inline]
fn window(o: usize, k: usize, stride: usize, pad_before: usize, size: usize) -> (usize, usize) {
    let start = o * stride;
    let lo = start.max(pad_before) - pad_before;
    let hi = (start + k).min(pad_before + size) - pad_before;
    (lo, hi)
}

/// For each output pixel and channel: `init`, fold every valid input value of the window into it with
/// `combine` (padding cells are never visited), then write `finish(acc, valid_cells)`.
#[inline(always)]
pub(crate) fn pool2d(
    p: &Pool2dParams,
    x: In<'_, i8>,
    y: Out<'_, i8>,
    init: i32,
    combine: impl Fn(i32, i8) -> i32,
    finish: impl Fn(i32, usize) -> i8,
) {
    let (batch, in_h, in_w, channels) = (x.dims[0], x.dims[1], x.dims[2], x.dims[3]);
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
            let (y0, y1) = window(oy, k_h, stride_h, pad_top, in_h);
            for ox in 0..out_w {
                let (x0, x1) = window(ox, k_w, stride_w, pad_left, in_w);
                let Some(out) = pixels.next() else { return };
                let cells = (y1 - y0) * (x1 - x0);
                for (c, out) in out.iter_mut().enumerate() {
                    let mut acc = init;
                    for iy in y0..y1 {
                        let row = ((n * in_h + iy) * in_w) * channels;
                        for ix in x0..x1 {
                            acc = combine(acc, x.data[row + ix * channels + c]);
                        }
                    }
                    *out = finish(acc, cells);
                }
            }
        }
    }
}
