//! Pooling over NHWC activations, vectorized over the channels: each output pixel's channels are
//! folded over its window in registers, four vectors at a time, then the remaining whole vectors, then
//! the last channels one by one. The window's cells are visited in the reference's order (rows, then
//! columns), so max and average pooling give the reference's bits.

use ember_core::ops::pool::Pool2dParams;
use ember_core::ops::{In, Out};

use crate::simd::{Scalar, Simd};

pub(crate) mod avg_pool;
pub(crate) mod global_avg_pool;
pub(crate) mod max_pool;

/// How a pool combines its cells (the `C` parameter of [`pool`]): the larger (NaN never wins, as
/// with `f32::max`), or the sum.
const MAX: u8 = 0;
const SUM: u8 = 1;

/// The window of an output pixel: input rows `rows`, columns `cols`, and the factor the folded
/// values are multiplied by at the end (average pooling) or `None`.
pub(crate) struct Window {
    rows: (usize, usize),
    cols: (usize, usize),
    scale: Option<f32>,
}

/// Input rows (or columns) `lo..hi` under output row `o`, as the reference clips them to the input.
#[inline]
fn span(o: usize, k: usize, stride: usize, pad_before: usize, size: usize) -> (usize, usize) {
    let start = o * stride;
    let lo = start.max(pad_before) - pad_before;
    let hi = (start + k).min(pad_before + size) - pad_before;
    (lo, hi)
}

/// Runs `C` over each window of a 2-D pool (`scale` gives average pooling's factor for a window of
/// `cells` valid cells, or `None` for max pooling).
#[inline(always)]
fn pool2d<S: Simd, const C: u8>(
    s: S,
    p: &Pool2dParams,
    x: In<'_>,
    y: Out<'_>,
    scale: impl Fn(usize) -> Option<f32>,
) {
    let (batch, in_h, in_w) = (x.dims[0], x.dims[1], x.dims[2]);
    let (out_h, out_w) = (y.dims[1], y.dims[2]);
    let (k_h, k_w) = (usize::from(p.kernel_h), usize::from(p.kernel_w));
    let (stride_h, stride_w) = (usize::from(p.stride_h), usize::from(p.stride_w));
    let (pad_top, pad_left) = (usize::from(p.pad_top), usize::from(p.pad_left));
    let channels = x.dims[3];
    if y.data.is_empty() || channels == 0 {
        return;
    }
    let image = in_h * in_w * channels;
    let mut pixels = y.data.chunks_exact_mut(channels);
    for n in 0..batch {
        let src = &x.data[n * image..][..image];
        for oy in 0..out_h {
            let rows = span(oy, k_h, stride_h, pad_top, in_h);
            for ox in 0..out_w {
                let cols = span(ox, k_w, stride_w, pad_left, in_w);
                let Some(out) = pixels.next() else { return };
                let cells = (rows.1 - rows.0) * (cols.1 - cols.0);
                let window = Window {
                    rows,
                    cols,
                    scale: scale(cells),
                };
                pool_pixel::<S, C>(s, src, (in_w, channels), &window, out);
            }
        }
    }
}

/// One output pixel of a pool over `src` (one image, `(width, channels)`): every channel folded over
/// `w` with `C`, four vectors of channels at a time, then the remaining (fewer than four) vectors.
#[inline(always)]
fn pool_pixel<S: Simd, const C: u8>(
    s: S,
    src: &[f32],
    shape: (usize, usize),
    w: &Window,
    out: &mut [f32],
) {
    let channels = shape.1;
    let whole = channels / S::LANES * S::LANES;
    let mut c = 0;
    while c + 4 * S::LANES <= whole {
        fold_window::<S, C, 4>(s, src, shape, w, c, out);
        c += 4 * S::LANES;
    }
    // The remaining whole vectors together, each in its own accumulator.
    match (whole - c) / S::LANES {
        3 => fold_window::<S, C, 3>(s, src, shape, w, c, out),
        2 => fold_window::<S, C, 2>(s, src, shape, w, c, out),
        1 => fold_window::<S, C, 1>(s, src, shape, w, c, out),
        _ => {}
    }
    c = whole;
    // The last channels one at a time: max and sums give the same bits on one lane as on many.
    while c < channels {
        fold_window::<Scalar, C, 1>(Scalar, src, shape, w, c, out);
        c += 1;
    }
}

/// Channels `c..c + V * LANES` of one output pixel: folded over the window with `C` in `V`
/// accumulators, scaled, and written to `out`.
#[inline(always)]
fn fold_window<T: Simd, const C: u8, const V: usize>(
    t: T,
    src: &[f32],
    (width, channels): (usize, usize),
    w: &Window,
    c: usize,
    out: &mut [f32],
) {
    let init = t.splat(if C == MAX { f32::NEG_INFINITY } else { 0.0 });
    let mut acc = [init; V];
    for iy in w.rows.0..w.rows.1 {
        let row = &src[(iy * width + w.cols.0) * channels..][..(w.cols.1 - w.cols.0) * channels];
        for cell in row.chunks_exact(channels) {
            let values = &cell[c..c + V * T::LANES];
            for (k, acc) in acc.iter_mut().enumerate() {
                // SAFETY: `values` holds V * LANES values.
                let v = unsafe { t.load(values.as_ptr().add(k * T::LANES)) };
                *acc = if C == MAX {
                    t.max(v, *acc)
                } else {
                    t.add(*acc, v)
                };
            }
        }
    }
    let out = &mut out[c..c + V * T::LANES];
    for (k, &acc) in acc.iter().enumerate() {
        let v = match w.scale {
            Some(scale) => t.mul(acc, t.splat(scale)),
            None => acc,
        };
        // SAFETY: `out` has room for V * LANES values.
        unsafe { t.store(out.as_mut_ptr().add(k * T::LANES), v) };
    }
}
