//! Resize of the H and W axes (the last two, NCHW; or the two before the channels, NHWC; the other
//! axes are kept): nearest or bilinear, with ONNX's coordinate transformations. The scales are the ones ONNX uses in the
//! coordinate transformation (`output / input` when the model gives sizes).

pub use crate::schema::{CoordMode, NearestMode, ResizeMode, ResizeParams};

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// Index of the H axis for a tensor of rank `rank` (W follows it).
pub fn h_axis(p: &ResizeParams, rank: usize) -> usize {
    rank - 2 - usize::from(p.channels_last)
}

/// Checks the rank (>= 2, or >= 3 channels-last), equal ranks and dims off H and W, finite positive
/// scales, and that a non-empty output has a non-empty input to read.
pub fn validate(p: &ResizeParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(y)?;
    let rank = x.len();
    ensure(
        rank >= 2 + usize::from(p.channels_last),
        "resize input rank is too low for its layout",
    )?;
    ensure(y.len() == rank, "resize output rank differs from input")?;
    let h = h_axis(p, rank);
    let same_off_axes = x
        .iter()
        .zip(y)
        .enumerate()
        .all(|(i, (dx, dy))| i == h || i == h + 1 || dx == dy);
    ensure(same_off_axes, "resize changes an axis other than H and W")?;
    let good = |s: f32| s.is_finite() && s > 0.0;
    ensure(
        good(p.scale_h) && good(p.scale_w),
        "resize scales must be finite and positive",
    )?;
    let empty = |d: &[usize]| d.contains(&0);
    ensure(
        empty(y) || !empty(x),
        "resize of an empty input to a non-empty output",
    )
}

/// Input coordinate of output coordinate `o` on an axis of `len_in` -> `len_out` elements.
///
/// ONNX's "resized length" is `len_in * scale`, which is not always a whole number (scales of 0.6
/// on 4 elements: 2.4, for an output of 2); when it is the output length up to f32 rounding (sizes
/// given), the output length is used exactly.
///
/// Public so that accelerated kernels compute the same coordinates (and so the same outputs, bit for
/// bit) as this reference.
pub fn source(coord: CoordMode, o: usize, len_in: usize, len_out: usize, scale: f32) -> f32 {
    let o = o as f32;
    let mut resized = len_in as f32 * scale;
    if (resized - len_out as f32).abs() < 1e-3 {
        resized = len_out as f32;
    }
    match coord {
        CoordMode::HalfPixel => (o + 0.5) / scale - 0.5,
        CoordMode::PytorchHalfPixel if resized > 1.0 => (o + 0.5) / scale - 0.5,
        CoordMode::PytorchHalfPixel => 0.0,
        CoordMode::AlignCorners if resized > 1.0 => o * (len_in as f32 - 1.0) / (resized - 1.0),
        CoordMode::AlignCorners => 0.0,
        CoordMode::Asymmetric => o / scale,
    }
}

/// Index of the nearest input element (clamped into `0..len_in`, `len_in >= 1`).
pub fn nearest(mode: NearestMode, c: f32, len_in: usize) -> usize {
    let r = match mode {
        NearestMode::RoundPreferFloor if c - libm::floorf(c) == 0.5 => libm::floorf(c),
        NearestMode::RoundPreferCeil if c - libm::floorf(c) == 0.5 => libm::ceilf(c),
        NearestMode::RoundPreferFloor | NearestMode::RoundPreferCeil => libm::roundf(c),
        NearestMode::Floor => libm::floorf(c),
        NearestMode::Ceil => libm::ceilf(c),
    };
    // `as` saturates: negatives (and NaN) become 0.
    (r as usize).min(len_in - 1)
}

/// The two neighbours and the weight of the second, for a coordinate clamped into `[0, len_in - 1]`.
pub fn neighbours(c: f32, len_in: usize) -> (usize, usize, f32) {
    let c = c.max(0.0).min((len_in - 1) as f32);
    let lo = libm::floorf(c);
    let i0 = (lo as usize).min(len_in - 1);
    (i0, (i0 + 1).min(len_in - 1), c - lo)
}

/// The bilinear value between `top = [a, b]` and `bottom = [a, b]` at weights `fx` (of each `b`) and
/// `fy` (of `bottom`), in the order every kernel computes it.
#[inline(always)]
pub fn bilinear(top: [f32; 2], bottom: [f32; 2], fx: f32, fy: f32) -> f32 {
    let t = top[0] + (top[1] - top[0]) * fx;
    let d = bottom[0] + (bottom[1] - bottom[0]) * fx;
    t + (d - t) * fy
}

/// Resizes each `[H, W]` plane of `x` (of `[H, W, C]` when channels-last) into the matching plane
/// of `y`.
pub fn resize(p: &ResizeParams, x: In<'_>, y: Out<'_>) {
    if y.data.is_empty() {
        return;
    }
    let h = h_axis(p, x.dims.len());
    let (h_in, w_in) = (x.dims[h], x.dims[h + 1]);
    let (h_out, w_out) = (y.dims[h], y.dims[h + 1]);
    // Elements per (h, w) position: the channels when channels-last, else 1.
    let c: usize = x.dims[h + 2..].iter().product();
    let planes = x.data.chunks_exact(h_in * w_in * c);
    for (src, dst) in planes.zip(y.data.chunks_exact_mut(h_out * w_out * c)) {
        for (oy, row) in dst.chunks_exact_mut(w_out * c).enumerate() {
            let cy = source(p.coord, oy, h_in, h_out, p.scale_h);
            match p.mode {
                ResizeMode::Nearest(m) => {
                    let line = &src[nearest(m, cy, h_in) * w_in * c..][..w_in * c];
                    for (ox, out) in row.chunks_exact_mut(c).enumerate() {
                        let cx = source(p.coord, ox, w_in, w_out, p.scale_w);
                        out.copy_from_slice(&line[nearest(m, cx, w_in) * c..][..c]);
                    }
                }
                ResizeMode::Linear => {
                    let (y0, y1, fy) = neighbours(cy, h_in);
                    let top = &src[y0 * w_in * c..][..w_in * c];
                    let bottom = &src[y1 * w_in * c..][..w_in * c];
                    for (ox, out) in row.chunks_exact_mut(c).enumerate() {
                        let cx = source(p.coord, ox, w_in, w_out, p.scale_w);
                        let (x0, x1, fx) = neighbours(cx, w_in);
                        for (k, o) in out.iter_mut().enumerate() {
                            *o = bilinear(
                                [top[x0 * c + k], top[x1 * c + k]],
                                [bottom[x0 * c + k], bottom[x1 * c + k]],
                                fx,
                                fy,
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Signature of a resize kernel.
pub type ResizeFn = fn(&ResizeParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::resize`](crate::Kernels::resize) entry, which runs
    /// [`OpKind::Resize`](crate::OpKind::Resize).
    Resize: ResizeFn = resize, ResizeParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
