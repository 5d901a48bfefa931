//! Resize of the H and W axes (the last two, NCHW; or the two before the channels, NHWC; the other
//! axes are kept): nearest, bilinear, bicubic, and antialiased bilinear or bicubic, with ONNX's
//! coordinate transformations. The scales are the ones ONNX uses in the coordinate transformation
//! (`output / input` when the model gives sizes).
//!
//! This module is the one place where resize coordinates and filter weights are computed: the
//! targets' kernels call [`source`], [`nearest`], [`neighbours`] and [`filter_taps`].

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
    if let ResizeMode::Cubic { a, .. } = p.mode {
        ensure(a.is_finite(), "resize cubic coefficient must be finite")?;
    }
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
        CoordMode::HalfPixelSymmetric => {
            let offset = len_in as f32 / 2.0 * (1.0 - len_out as f32 / resized);
            offset + (o + 0.5) / scale - 0.5
        }
    }
}

/// Keys' cubic convolution kernel with coefficient `a` at distance `d` (ONNX's `cubic_coeff_a`):
/// `(a + 2)|d|^3 - (a + 3)|d|^2 + 1` within 1, `a|d|^3 - 5a|d|^2 + 8a|d| - 4a` within 2, else 0.
pub fn cubic_weight(a: f32, d: f32) -> f32 {
    let d = d.abs();
    if d <= 1.0 {
        ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
    } else if d < 2.0 {
        ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
    } else {
        0.0
    }
}

/// The triangle (linear) kernel at distance `d`: `max(0, 1 - |d|)`.
pub fn linear_weight(d: f32) -> f32 {
    (1.0 - d.abs()).max(0.0)
}

/// The kernel of a filtered mode (cubic or antialiased linear): its radius in taps, whether a
/// downscale widens it, and whether taps off the input are dropped. `None` for nearest and plain
/// bilinear, which [`nearest`] and [`neighbours`] serve.
fn filter(mode: ResizeMode) -> Option<(f32, bool, bool)> {
    match mode {
        ResizeMode::Nearest(_) | ResizeMode::Linear => None,
        ResizeMode::Cubic {
            exclude_outside,
            antialias,
            ..
        } => Some((2.0, antialias, exclude_outside)),
        ResizeMode::LinearAntialias { exclude_outside } => Some((1.0, true, exclude_outside)),
    }
}

/// The factor on the distance of a tap before the kernel: the scale for an antialiased downscale
/// (the kernel is `1 / scale` wider), else 1.
fn stretch(widen: bool, scale: f32) -> f32 {
    if widen && scale < 1.0 {
        scale
    } else {
        1.0
    }
}

/// Taps per output element along an axis of a filtered mode (cubic or antialiased linear) at
/// `scale`: 4 for cubic, 2 for linear, more when antialiasing widens the kernel; 0 for nearest and
/// plain bilinear.
pub fn filter_width(mode: ResizeMode, scale: f32) -> usize {
    match filter(mode) {
        Some((radius, widen, _)) => 2 * (1 - first_tap(radius, stretch(widen, scale))) as usize,
        None => 0,
    }
}

/// The first tap's offset from `floor(c)` (ONNX: `floor(-radius / s) + 1`), at most 0.
fn first_tap(radius: f32, s: f32) -> isize {
    libm::floorf(-radius / s) as isize + 1
}

/// Calls `tap(index, weight)` for each of the [`filter_width`] taps of a filtered mode (cubic or
/// antialiased linear) at input coordinate `c` on an axis of `len_in >= 1` elements, in increasing
/// order. A tap off the input reads the nearest edge element (its index clamped), or with
/// `exclude_outside` gets weight 0; antialiased weights, and any with taps excluded, are divided by
/// their sum. Nothing is called for nearest and plain bilinear.
pub fn filter_taps(mode: ResizeMode, c: f32, len_in: usize, scale: f32, mut tap: impl FnMut(usize, f32)) {
    let Some((radius, widen, exclude_outside)) = filter(mode) else {
        return;
    };
    let s = stretch(widen, scale);
    let first = first_tap(radius, s);
    let n = 2 * (1 - first);
    let base = libm::floorf(c) as isize + first;
    let last = len_in as isize - 1;
    let weight = |j: isize| {
        if exclude_outside && !(0..=last).contains(&j) {
            return 0.0;
        }
        let d = (j as f32 - c) * s;
        match mode {
            ResizeMode::Cubic { a, .. } => cubic_weight(a, d),
            _ => linear_weight(d),
        }
    };
    let normalize = widen || exclude_outside;
    let sum: f32 = if normalize {
        (base..base + n).map(weight).sum()
    } else {
        1.0
    };
    // A zero sum (every tap excluded) leaves the weights as they are: all 0.
    let norm = if sum != 0.0 { 1.0 / sum } else { 1.0 };
    for j in base..base + n {
        // `clamp` keeps the index in `0..len_in`; `last >= 0` as `len_in >= 1`.
        let w = if normalize { weight(j) * norm } else { weight(j) };
        tap(j.clamp(0, last) as usize, w);
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
                ResizeMode::Cubic { .. } | ResizeMode::LinearAntialias { .. } => {
                    for (ox, out) in row.chunks_exact_mut(c).enumerate() {
                        let cx = source(p.coord, ox, w_in, w_out, p.scale_w);
                        for (k, o) in out.iter_mut().enumerate() {
                            *o = filtered(p.mode, src, [cy, cx], [h_in, w_in], [p.scale_h, p.scale_w], c, k);
                        }
                    }
                }
            }
        }
    }
}

/// The filtered value of channel `k` at input coordinates `[cy, cx]` of a plane `[h_in, w_in, c]`:
/// each row's taps summed along W, then those sums along H.
fn filtered(
    mode: ResizeMode,
    src: &[f32],
    [cy, cx]: [f32; 2],
    [h_in, w_in]: [usize; 2],
    [scale_h, scale_w]: [f32; 2],
    c: usize,
    k: usize,
) -> f32 {
    let mut acc = 0.0;
    filter_taps(mode, cy, h_in, scale_h, |iy, wy| {
        let line = &src[iy * w_in * c..][..w_in * c];
        let mut row = 0.0;
        filter_taps(mode, cx, w_in, scale_w, |ix, wx| row += wx * line[ix * c + k]);
        acc += wy * row;
    });
    acc
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn taps(mode: ResizeMode, c: f32, len_in: usize, scale: f32) -> Vec<(usize, f32)> {
        let mut v = Vec::new();
        filter_taps(mode, c, len_in, scale, |i, w| v.push((i, w)));
        assert_eq!(v.len(), filter_width(mode, scale));
        v
    }

    fn cubic(a: f32, exclude_outside: bool, antialias: bool) -> ResizeMode {
        ResizeMode::Cubic { a, exclude_outside, antialias }
    }

    fn close(got: &[(usize, f32)], want: &[(usize, f32)]) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (&(gi, gw), &(wi, ww)) in got.iter().zip(want) {
            assert!(gi == wi && (gw - ww).abs() < 1e-6, "{got:?} vs {want:?}");
        }
    }

    // Values worked by hand from Keys' kernel.
    #[test]
    fn cubic_kernel_by_hand() {
        assert_eq!(cubic_weight(-0.75, 0.0), 1.0);
        assert_eq!(cubic_weight(-0.75, 1.0), 0.0);
        assert_eq!(cubic_weight(-0.75, 2.0), 0.0);
        assert_eq!(cubic_weight(-0.75, 0.5), 0.59375);
        assert_eq!(cubic_weight(-0.75, -1.5), -0.09375);
        assert_eq!(cubic_weight(-0.5, 0.5), 0.5625);
        assert_eq!(cubic_weight(-0.5, 1.5), -0.0625);
        assert_eq!(cubic_weight(-0.5, 3.0), 0.0);
    }

    #[test]
    fn cubic_taps_by_hand() {
        // Halfway between 1 and 2: taps 0..=3 at distances 1.5, 0.5, 0.5, 1.5.
        let m = cubic(-0.75, false, false);
        close(&taps(m, 1.5, 4, 2.0), &[(0, -0.09375), (1, 0.59375), (2, 0.59375), (3, -0.09375)]);
        // a = -0.5 at 0.25: distances 1.25, 0.25, 0.75, 1.75; tap -1 reads the edge.
        let m = cubic(-0.5, false, false);
        let want = [(0, -0.0703125), (0, 0.8671875), (1, 0.2265625), (2, -0.0234375)];
        close(&taps(m, 0.25, 4, 2.0), &want);
        // Excluded taps -1 and 2 leave 0.59375 twice, renormalized to 0.5.
        let m = cubic(-0.75, true, false);
        close(&taps(m, 0.5, 2, 2.0), &[(0, 0.0), (0, 0.5), (1, 0.5), (1, 0.0)]);
        // A whole coordinate is the element itself.
        close(&taps(cubic(-0.75, false, false), 2.0, 4, 2.0), &[(1, 0.0), (2, 1.0), (3, 0.0), (3, 0.0)]);
    }

    #[test]
    fn antialias_taps_by_hand() {
        // Linear at scale 0.5: the triangle twice as wide, taps -1..=2 at distances (j - 0.5) / 2,
        // weights 0.25, 0.75, 0.75, 0.25 over their sum 2.
        let m = ResizeMode::LinearAntialias { exclude_outside: false };
        close(&taps(m, 0.5, 4, 0.5), &[(0, 0.125), (0, 0.375), (1, 0.375), (2, 0.125)]);
        // Upscaling does not widen: plain linear weights.
        close(&taps(m, 0.25, 4, 2.0), &[(0, 0.75), (1, 0.25)]);
        // Cubic at scale 0.5: 8 taps, weights `cubic((j - c) / 2)` summing to 1.
        let m = cubic(-0.5, false, true);
        let t = taps(m, 3.0, 8, 0.5);
        assert_eq!(t.len(), 8);
        let sum: f32 = t.iter().map(|&(_, w)| w).sum();
        assert!((sum - 1.0).abs() < 1e-6);
        // Distances 1.5 .. 0 .. 1.5 (j = 0..=6, and j = 7 at distance 2 weighs 0).
        let raw = [-0.0625, 0.0, 0.5625, 1.0, 0.5625, 0.0, -0.0625, 0.0];
        let total: f32 = raw.iter().sum();
        let want: Vec<_> = raw.iter().enumerate().map(|(j, w)| (j, w / total)).collect();
        close(&t, &want);
    }

    #[test]
    fn half_pixel_symmetric_by_hand() {
        // 4 -> 3 at scale 0.8: resized length 3.2, offset 2 * (1 - 3 / 3.2) = 0.125.
        let c = source(CoordMode::HalfPixelSymmetric, 0, 4, 3, 0.8);
        assert!((c - (0.125 + 0.5 / 0.8 - 0.5)).abs() < 1e-6);
        // A whole resized length is half_pixel.
        let c = source(CoordMode::HalfPixelSymmetric, 1, 4, 8, 2.0);
        assert_eq!(c, source(CoordMode::HalfPixel, 1, 4, 8, 2.0));
    }
}
