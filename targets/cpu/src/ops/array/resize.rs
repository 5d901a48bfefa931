//! Resize (nearest and bilinear) with the column coordinates computed once per op instead of once per
//! output element: the reference kernel maps every output element's coordinates (a division and, for
//! nearest, a software rounding), which costs more than the copy or the interpolation itself. Here the
//! columns' source indices and weights go into a table on the stack, a block of columns at a time, and
//! every row of every plane reuses it. The coordinates and the interpolation are `ember-core`'s own
//! functions, so the outputs equal the reference's bit for bit. Level-independent: the work is loads and
//! stores, which the compiler vectorizes along the channels where there are several.
//!
//! Bicubic and antialiased resizes run `ember-core`'s reference kernel.

use ember_core::ops::array::resize::{
    self as reference, bilinear, h_axis, nearest, neighbours, source, ResizeMode, ResizeParams,
};
use ember_core::ops::{In, Out};

/// Output columns per block of the coordinate table (three arrays of this many entries on the stack).
const BLOCK: usize = 256;

/// Resizes each `[H, W]` plane of `x` (of `[H, W, C]` when channels-last) into the matching plane of
/// `y`, as `ember_core::ops::array::resize::resize` does.
pub(crate) fn resize(p: &ResizeParams, x: In<'_>, y: Out<'_>) {
    if y.data.is_empty() {
        return;
    }
    // The rounding of a nearest resize; `None` for bilinear.
    let rounding = match p.mode {
        ResizeMode::Nearest(m) => Some(m),
        ResizeMode::Linear => None,
        ResizeMode::Cubic { .. } | ResizeMode::LinearAntialias { .. } => {
            return reference::resize(p, x, y)
        }
    };
    let h = h_axis(p, x.dims.len());
    let (h_in, w_in) = (x.dims[h], x.dims[h + 1]);
    let (h_out, w_out) = (y.dims[h], y.dims[h + 1]);
    // Elements per (h, w) position: the channels when channels-last, else 1.
    let c: usize = x.dims[h + 2..].iter().product();
    let (plane_in, plane_out) = (h_in * w_in * c, h_out * w_out * c);
    // `validate` guarantees a non-empty input for a non-empty output; a zero-sized plane has no work.
    if plane_in == 0 || plane_out == 0 {
        return;
    }
    // Column table of one block: the first and second source column (times `c`) and the weight of the
    // second (0 and unused for nearest).
    let mut first = [0usize; BLOCK];
    let mut second = [0usize; BLOCK];
    let mut weight = [0f32; BLOCK];
    for ox0 in (0..w_out).step_by(BLOCK) {
        let cols = BLOCK.min(w_out - ox0);
        for i in 0..cols {
            let cx = source(p.coord, ox0 + i, w_in, w_out, p.scale_w);
            match rounding {
                Some(m) => first[i] = nearest(m, cx, w_in) * c,
                None => {
                    let (x0, x1, fx) = neighbours(cx, w_in);
                    (first[i], second[i], weight[i]) = (x0 * c, x1 * c, fx);
                }
            }
        }
        let (first, second, weight) = (&first[..cols], &second[..cols], &weight[..cols]);
        let planes = x.data.chunks_exact(plane_in);
        for (src, dst) in planes.zip(y.data.chunks_exact_mut(plane_out)) {
            for (oy, row) in dst.chunks_exact_mut(w_out * c).enumerate() {
                let row = &mut row[ox0 * c..][..cols * c];
                let cy = source(p.coord, oy, h_in, h_out, p.scale_h);
                match rounding {
                    Some(m) => {
                        let line = &src[nearest(m, cy, h_in) * w_in * c..][..w_in * c];
                        gather(line, first, c, row);
                    }
                    None => {
                        let (y0, y1, fy) = neighbours(cy, h_in);
                        let top = &src[y0 * w_in * c..][..w_in * c];
                        let bottom = &src[y1 * w_in * c..][..w_in * c];
                        interpolate(top, bottom, first, second, weight, fy, c, row);
                    }
                }
            }
        }
    }
}

/// `row[i * c..][..c] = line[first[i]..][..c]` for each column `i`.
#[inline(always)]
fn gather(line: &[f32], first: &[usize], c: usize, row: &mut [f32]) {
    if c == 1 {
        for (o, &i) in row.iter_mut().zip(first) {
            *o = line[i];
        }
    } else if c < SHORT_COPY {
        // A `memcpy` call per pixel costs more than copying a few channels in place.
        for (out, &i) in row.chunks_exact_mut(c).zip(first) {
            for (o, &v) in out.iter_mut().zip(&line[i..][..c]) {
                *o = v;
            }
        }
    } else {
        for (out, &i) in row.chunks_exact_mut(c).zip(first) {
            out.copy_from_slice(&line[i..][..c]);
        }
    }
}

/// Channels below which [`gather`] copies a pixel element by element rather than with `memcpy`.
const SHORT_COPY: usize = 16;

/// The bilinear values of one output row from its two source rows.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn interpolate(
    top: &[f32],
    bottom: &[f32],
    first: &[usize],
    second: &[usize],
    weight: &[f32],
    fy: f32,
    c: usize,
    row: &mut [f32],
) {
    if c == 1 {
        for (((o, &x0), &x1), &fx) in row.iter_mut().zip(first).zip(second).zip(weight) {
            *o = bilinear([top[x0], top[x1]], [bottom[x0], bottom[x1]], fx, fy);
        }
        return;
    }
    for (((out, &x0), &x1), &fx) in row.chunks_exact_mut(c).zip(first).zip(second).zip(weight) {
        let tops = top[x0..][..c].iter().zip(&top[x1..][..c]);
        let bottoms = bottom[x0..][..c].iter().zip(&bottom[x1..][..c]);
        for ((o, (&t0, &t1)), (&b0, &b1)) in out.iter_mut().zip(tops).zip(bottoms) {
            *o = bilinear([t0, t1], [b0, b1], fx, fy);
        }
    }
}
