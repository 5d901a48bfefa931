//! Discrete Fourier transforms (ONNX `DFT`, opsets 17 and 20, and `STFT`, opset 17), f32.
//!
//! Complex tensors are `[..., 2]` as ONNX has them (a last axis of 1 is a real input). Every
//! transform runs in the output's own bytes, so the kernel needs no scratch and no allocation: where
//! a transform's bins lie next to one another (an `STFT`, or a `DFT` along the axis before the complex
//! one, the usual case) and its length has no prime factor above 13 (512, Whisper's 400 = 2^4 5^2,
//! 320), it is a mixed-radix FFT (decimation in time, the samples placed in digit-reversed order as
//! they are read; radix-2 stages in f32, the others in f64), and a real input with one-sided output
//! is packed into a complex FFT of half the length and unpacked in place. Other lengths and strided
//! axes sum the definition directly, in f64, with the twiddles by recurrence.

pub use crate::schema::math::dft::DftParams;

use crate::ops::entry::{op_entry, out, shape_reason, OutDims};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// The bins a forward transform of `p` writes per lane: `n/2 + 1` one-sided, else `n`.
pub fn bins(p: &DftParams) -> usize {
    let n = p.length as usize;
    if p.onesided && !p.inverse {
        n / 2 + 1
    } else {
        n
    }
}

/// The output's dims for an input of `x` (see [`DftParams`]), or why it does not fit.
pub fn out_dims(p: &DftParams, x: &[usize]) -> Result<OutDims, &'static str> {
    let rank = x.len();
    let axis = usize::from(p.axis);
    if rank < 2 || axis + 1 >= rank {
        return Err("dft axis must be below the input's last (complex) axis");
    }
    let mut y = OutDims::from_slice(x).map_err(|_| "dft input rank is above the format's limit")?;
    y[rank - 1] = 2;
    if p.frame_step == 0 && p.inverse && p.onesided {
        // The inverse of a one-sided spectrum: `n` real samples.
        y[axis] = p.length as usize;
        y[rank - 1] = 1;
        return Ok(y);
    }
    if p.frame_step == 0 {
        y[axis] = bins(p);
        return Ok(y);
    }
    if rank != 3 || axis != 1 {
        return Err("stft input must be [batch, signal, 1 or 2], framed along axis 1");
    }
    let n = p.length as usize;
    let frames = x[1]
        .checked_sub(n)
        .ok_or("stft signal is shorter than one frame")?
        / p.frame_step as usize
        + 1;
    y[1] = frames;
    y.push(2).map_err(|_| "dft input rank is above the format's limit")?;
    y[2] = bins(p);
    Ok(y)
}

/// Checks the parameters (a length of at least 1; no framed inverse), a last axis of 1 or 2, the
/// window (when there is one) `[length]`, and `y` shaped as [`out_dims`] says.
pub fn validate(
    p: &DftParams,
    x: &[usize],
    window: Option<&[usize]>,
    y: &[usize],
) -> Result<(), Error> {
    check_dims(x)?;
    ensure(p.length >= 1, "dft length must be at least 1")?;
    ensure(
        matches!(x.last(), Some(1 | 2)),
        "dft input's last axis must be 1 (real) or 2 (complex)",
    )?;
    ensure(
        p.frame_step == 0 || !p.inverse,
        "an inverse stft is not supported",
    )?;
    ensure(
        window.is_none_or(|w| w == [p.length as usize]) && (window.is_none() || p.frame_step != 0),
        "the window must be [frame_length], and only an stft takes one",
    )?;
    let want = out_dims(p, x).map_err(|reason| Error::Shape { reason })?;
    ensure(y == want.as_slice(), "dft output shape is not the transform's")
}

/// `y` = the transform of `x` (with the window of an `STFT`), as [`DftParams`] says.
pub fn dft(p: &DftParams, x: In<'_>, window: Option<&[f32]>, y: Out<'_>) {
    let rank = x.dims.len();
    let axis = usize::from(p.axis);
    if rank < 2 || axis + 1 >= rank {
        return;
    }
    let n = p.length as usize;
    let bins = bins(p);
    let channels = x.dims[rank - 1];
    let len = x.dims[axis];
    let inner: usize = x.dims[axis + 1..rank - 1].iter().product();
    let outer: usize = x.dims[..axis].iter().product();
    let (frames, step) = if p.frame_step == 0 {
        (1, 0)
    } else {
        (y.dims[1], p.frame_step as usize)
    };
    // Elements of one outer block of `x` and of `y`.
    let x_block = len * inner * channels;
    let y_block = if p.inverse && p.onesided {
        n * inner
    } else {
        frames * bins * inner * 2
    };
    if n == 0 || x.data.len() != outer * x_block || y.data.len() != outer * y_block {
        return;
    }
    let scale = if p.inverse { 1.0 / n as f64 } else { 1.0 };
    if p.inverse && p.onesided {
        for (xb, yb) in x.data.chunks_exact(x_block.max(1)).zip(y.data.chunks_exact_mut((n * inner).max(1))) {
            for lane in 0..inner {
                let bin = |k: usize| {
                    let at = (k * inner + lane) * channels;
                    let re = xb.get(at).copied().unwrap_or(0.0);
                    let im = if channels == 2 { xb.get(at + 1).copied().unwrap_or(0.0) } else { 0.0 };
                    (f64::from(re), f64::from(im))
                };
                inverse_real(n, len, scale, &bin, |j, v| {
                    if let Some(y) = yb.get_mut(j * inner + lane) {
                        *y = v;
                    }
                });
            }
        }
        return;
    }
    for (xb, yb) in x
        .data
        .chunks_exact(x_block.max(1))
        .zip(y.data.chunks_exact_mut(y_block.max(1)))
    {
        for frame in 0..frames {
            let start = frame * step;
            // Samples past the signal (or past the frame) are zeros.
            let avail = len.saturating_sub(start).min(n);
            for lane in 0..inner {
                let sample = |j: usize| -> (f32, f32) {
                    if j >= avail {
                        return (0.0, 0.0);
                    }
                    let at = ((start + j) * inner + lane) * channels;
                    let w = window.and_then(|w| w.get(j)).copied().unwrap_or(1.0);
                    let re = xb.get(at).copied().unwrap_or(0.0) * w;
                    let im = if channels == 2 {
                        xb.get(at + 1).copied().unwrap_or(0.0) * w
                    } else {
                        0.0
                    };
                    (re, im)
                };
                let base = (frame * bins * inner + lane) * 2;
                // An FFT where the lane's bins are contiguous and the length (or half of it, for
                // a real input's one-sided bins) has small prime factors.
                let slot = yb.get_mut(base..base + bins * 2).filter(|_| inner == 1 && n >= 2);
                let real = p.onesided && channels == 1 && n.is_multiple_of(2);
                let plan = match (real, p.onesided) {
                    (true, _) => Radices::of(n / 2),
                    (false, false) => Radices::of(n),
                    (false, true) => None,
                };
                if let (Some(slot), Some(plan)) = (slot, plan) {
                    if real {
                        real_fft(&plan, &sample, slot);
                    } else {
                        complex_fft(&plan, p.inverse, &sample, slot, scale as f32);
                    }
                } else {
                    direct(n, bins, p.inverse, scale, &sample, |k, re, im| {
                        if let Some(v) = yb.get_mut(base + k * inner * 2..base + k * inner * 2 + 2) {
                            v[0] = re;
                            v[1] = im;
                        }
                    });
                }
            }
        }
    }
}

/// The transform by its definition: bin `k` = the sum over `j` of `sample(j) e^(∓2πi jk/n)`, times
/// `(cos, sin)` of `sign * 2 pi p / q` (`sign` 1 or -1), in f64: the angle reduced exactly to an eighth of
/// a turn by integer arithmetic on `p / q`, then a Taylor polynomial there (its first left-out term
/// is below 5e-17) mapped back by the octant's symmetry. No `libm` call: its argument reduction for
/// any angle (`rem_pio2`, `sin`, `cos`: 5.8 KB of flash on a Cortex-M4F) is not needed for fractions
/// of a turn.
fn unit(p: usize, q: usize, sign: f64) -> (f64, f64) {
    let q = q.max(1);
    let eighths = (p % q) * 8;
    let (octant, rest) = (eighths / q, eighths % q);
    // The angle within the octant, in [0, pi/4]: measured from its start, or (odd octants) from its end.
    let frac = rest as f64 / q as f64;
    let t = core::f64::consts::FRAC_PI_4 * if octant % 2 == 0 { frac } else { 1.0 - frac };
    let t2 = t * t;
    let (mut s, mut c) = (0.0f64, 0.0f64);
    // sin t = t - t^3/3! + ... + t^15/15!, cos t = 1 - t^2/2! + ... + t^16/16!, by Horner.
    for k in (0..8).rev() {
        let (i, j) = (2 * k + 2, 2 * k + 3);
        s = 1.0 - t2 / (i * j) as f64 * s;
        c = 1.0 - t2 / ((i - 1) * i) as f64 * c;
    }
    let (s, c) = (t * s, c);
    // The octant's symmetry: (cos, sin) of octant * pi/4 + t (even) or (octant + 1) * pi/4 - t (odd).
    let (cos, sin) = match octant {
        0 => (c, s),
        1 => (s, c),
        2 => (-s, c),
        3 => (-c, s),
        4 => (-c, -s),
        5 => (-s, -c),
        6 => (s, -c),
        _ => (c, -s),
    };
    (cos, sign * sin)
}

/// `scale`, handed to `put(k, re, im)`.
fn direct(
    n: usize,
    bins: usize,
    inverse: bool,
    scale: f64,
    sample: &dyn Fn(usize) -> (f32, f32),
    mut put: impl FnMut(usize, f32, f32),
) {
    let sign = if inverse { 1.0 } else { -1.0 };
    for k in 0..bins {
        let (wc, ws) = unit(k, n, sign);
        let (mut wr, mut wi) = (1.0f64, 0.0f64);
        let (mut sr, mut si) = (0.0f64, 0.0f64);
        for j in 0..n {
            let (re, im) = sample(j);
            let (re, im) = (f64::from(re), f64::from(im));
            sr += re * wr - im * wi;
            si += re * wi + im * wr;
            let t = wr * wc - wi * ws;
            wi = wr * ws + wi * wc;
            wr = t;
        }
        put(k, (sr * scale) as f32, (si * scale) as f32);
    }
}

/// The inverse of a one-sided spectrum (numpy's `irfft`): `n` real samples from the bins `0..=n/2`
/// of `len` given (missing ones are zeros), each other bin the conjugate of its mirror; the
/// imaginary parts of bin 0 and of bin `n/2` (`n` even) are ignored. Sample `j`, times `scale`, is
/// handed to `put(j, value)`.
fn inverse_real(
    n: usize,
    len: usize,
    scale: f64,
    bin: &dyn Fn(usize) -> (f64, f64),
    mut put: impl FnMut(usize, f32),
) {
    let used = len.min(n / 2 + 1);
    for j in 0..n {
        let (wc, ws) = unit(j, n, 1.0);
        let (mut wr, mut wi) = (1.0f64, 0.0f64);
        let mut sum = 0.0f64;
        for k in 0..used {
            let (re, im) = bin(k);
            if k == 0 || 2 * k == n {
                sum += re * wr;
            } else {
                sum += 2.0 * (re * wr - im * wi);
            }
            let t = wr * wc - wi * ws;
            wi = wr * ws + wi * wc;
            wr = t;
        }
        put(j, (sum * scale) as f32);
    }
}

/// The largest prime factor of a length the FFT takes; a length with a larger one sums the
/// definition.
const MAX_RADIX: usize = 13;

/// How an `n`-point complex FFT runs: its radices (the prime factors of `n`, smallest first), each
/// a stage of decimation in time, the first stage combining single samples.
#[derive(Clone, Copy)]
struct Radices {
    n: usize,
    radix: [u8; usize::BITS as usize],
    count: usize,
}

impl Radices {
    /// The plan of an `n`-point FFT, or `None` when `n` has a prime factor above [`MAX_RADIX`].
    fn of(n: usize) -> Option<Self> {
        let mut plan = Radices {
            n,
            radix: [0; usize::BITS as usize],
            count: 0,
        };
        let mut rest = n;
        for r in [2usize, 3, 5, 7, 11, 13] {
            while rest > 1 && rest.is_multiple_of(r) {
                *plan.radix.get_mut(plan.count)? = r as u8;
                plan.count += 1;
                rest /= r;
            }
        }
        (rest == 1 && n >= 1).then_some(plan)
    }

    /// Where sample `j` sits before the stages: its digits in the radices, reversed (the bits
    /// reversed when every radix is 2).
    fn position(&self, j: usize) -> usize {
        if self.n.is_power_of_two() {
            let bits = self.n.trailing_zeros();
            return if bits == 0 {
                0
            } else {
                j.reverse_bits() >> (usize::BITS - bits)
            };
        }
        let (mut j, mut block, mut at) = (j, self.n, 0);
        for &r in self.radix[..self.count].iter().rev() {
            let r = usize::from(r);
            block /= r;
            at += (j % r) * block;
            j /= r;
        }
        at
    }

    /// The stages over `z` (`2n` floats, interleaved, in [`Radices::position`] order); `sign` -1
    /// forward, +1 inverse (unscaled). A stage of radix `r` turns each `r` transforms of `sub` points
    /// into one of `r sub`: element `k` of the `q`th, times `w^(qk)`, into an `r`-point DFT.
    fn run(&self, z: &mut [f32], sign: f64) {
        let n = self.n;
        if z.len() < 2 * n {
            return;
        }
        let mut sub = 1;
        for &r in &self.radix[..self.count] {
            let r = usize::from(r);
            let size = sub * r;
            // The r-th roots of unity of the small DFT, and the stage's twiddle step.
            let mut root = [(0.0f64, 0.0f64); MAX_RADIX];
            for (p, w) in root.iter_mut().enumerate().take(r) {
                *w = unit(p, r, sign);
            }
            let (wc, ws) = unit(1, size, sign);
            let (mut wr, mut wi) = (1.0f64, 0.0f64);
            for k in 0..sub {
                let mut group = 0;
                while group + size <= n {
                    let at = |q: usize| 2 * (group + k + q * sub);
                    if r == 2 {
                        let (a, b) = (at(0), at(1));
                        let (cr, ci) = (wr as f32, wi as f32);
                        let (br, bi) = (z[b], z[b + 1]);
                        let (tr, ti) = (br * cr - bi * ci, br * ci + bi * cr);
                        let (ar, ai) = (z[a], z[a + 1]);
                        z[a] = ar + tr;
                        z[a + 1] = ai + ti;
                        z[b] = ar - tr;
                        z[b + 1] = ai - ti;
                    } else {
                        let mut v = [(0.0f64, 0.0f64); MAX_RADIX];
                        let (mut tr, mut ti) = (1.0f64, 0.0f64);
                        for (q, v) in v.iter_mut().enumerate().take(r) {
                            let (a, b) = (f64::from(z[at(q)]), f64::from(z[at(q) + 1]));
                            *v = (a * tr - b * ti, a * ti + b * tr);
                            let t = tr * wr - ti * wi;
                            ti = tr * wi + ti * wr;
                            tr = t;
                        }
                        for p in 0..r {
                            let (mut sr, mut si) = (0.0f64, 0.0f64);
                            for (q, &(vr, vi)) in v.iter().enumerate().take(r) {
                                let (c, s) = root[(p * q) % r];
                                sr += vr * c - vi * s;
                                si += vr * s + vi * c;
                            }
                            z[at(p)] = sr as f32;
                            z[at(p) + 1] = si as f32;
                        }
                    }
                    group += size;
                }
                let t = wr * wc - wi * ws;
                wi = wr * ws + wi * wc;
                wr = t;
            }
            sub = size;
        }
    }
}

/// The transform of `sample` (`plan.n` points) into `slot` (`2n` floats), times `scale`.
fn complex_fft(
    plan: &Radices,
    inverse: bool,
    sample: &dyn Fn(usize) -> (f32, f32),
    slot: &mut [f32],
    scale: f32,
) {
    let n = plan.n;
    if slot.len() != 2 * n {
        return;
    }
    for j in 0..n {
        let (re, im) = sample(j);
        let at = plan.position(j);
        slot[2 * at] = re;
        slot[2 * at + 1] = im;
    }
    plan.run(slot, if inverse { 1.0 } else { -1.0 });
    if scale != 1.0 {
        slot.iter_mut().for_each(|v| *v *= scale);
    }
}

/// Bins `0..=n/2` of the forward transform of the real `sample` (`n = 2 half.n` points) into `slot`
/// (`n + 2` floats): the even samples as real parts and the odd ones as imaginary parts make an
/// `n/2`-point complex FFT `Z`, and bin `k` is `(Z[k] + conj Z[h-k]) / 2 - i e^(-2πik/n) (Z[k] -
/// conj Z[h-k]) / 2`, with `h = n/2`, computed for `k` and `h - k` together in place.
fn real_fft(half: &Radices, sample: &dyn Fn(usize) -> (f32, f32), slot: &mut [f32]) {
    let (h, n) = (half.n, 2 * half.n);
    if slot.len() != n + 2 {
        return;
    }
    for m in 0..h {
        let at = half.position(m);
        slot[2 * at] = sample(2 * m).0;
        slot[2 * at + 1] = sample(2 * m + 1).0;
    }
    half.run(&mut slot[..n], -1.0);
    let (z0r, z0i) = (slot[0], slot[1]);
    slot[0] = z0r + z0i;
    slot[1] = 0.0;
    slot[n] = z0r - z0i;
    slot[n + 1] = 0.0;
    let (wc, ws) = unit(1, n, -1.0);
    let (mut wr, mut wi) = (wc, ws);
    for k in 1..=h / 2 {
        let m = h - k;
        let (ar, ai) = (f64::from(slot[2 * k]), f64::from(slot[2 * k + 1]));
        let (br, bi) = (f64::from(slot[2 * m]), f64::from(slot[2 * m + 1]));
        // Bin k: E = (Z[k] + conj Z[m]) / 2, O = (Z[k] - conj Z[m]) / 2i, X = E + w^k O.
        let bin = |ar: f64, ai: f64, br: f64, bi: f64, wr: f64, wi: f64| {
            let (er, ei) = ((ar + br) / 2.0, (ai - bi) / 2.0);
            let (or, oi) = ((ai + bi) / 2.0, (br - ar) / 2.0);
            (er + wr * or - wi * oi, ei + wr * oi + wi * or)
        };
        let (xr, xi) = bin(ar, ai, br, bi, wr, wi);
        // Bin m = h - k: the same with the roles swapped and w^m = -conj(w^k).
        let (yr, yi) = bin(br, bi, ar, ai, -wr, wi);
        slot[2 * k] = xr as f32;
        slot[2 * k + 1] = xi as f32;
        slot[2 * m] = yr as f32;
        slot[2 * m + 1] = yi as f32;
        let t = wr * wc - wi * ws;
        wi = wr * ws + wi * wc;
        wr = t;
    }
}

/// Signature of a Fourier-transform kernel: parameters, input, window, output.
pub type DftFn = fn(&DftParams, In<'_>, Option<&[f32]>, Out<'_>);

op_entry! {
    /// The [`Kernels::dft`](crate::Kernels::dft) entry, which runs [`OpKind::Dft`](crate::OpKind::Dft).
    Dft: DftFn = dft, DftParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.opt(1), o.out_dims()));
    infer |p, x| out_dims(p, x.first().ok_or("the op has no input")?);
    run |kernel, p, a| kernel(p, a.x(0)?, a.opt(1)?, out(a.y)?);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The twiddles of every fraction of a turn up to q = 1,000 (and a few large q) within 4e-15 of
    /// std's f64 sine and cosine (of `2 pi p / q` rounded to f64: an angle near 2 pi is itself 1 ulp,
    /// 8.9e-16, from the exact one, so the reference is no closer than that).
    #[test]
    fn twiddles_match_sine_and_cosine() {
        let mut worst = 0.0f64;
        for q in (1..=1000).chain([4096, 16000, 48000, 65536]) {
            for p in (0..q).step_by((q / 200).max(1)) {
                for sign in [1.0, -1.0] {
                    let (c, s) = unit(p, q, sign);
                    let a = sign * core::f64::consts::TAU * p as f64 / q as f64;
                    worst = worst.max((c - a.cos()).abs()).max((s - a.sin()).abs());
                }
            }
        }
        assert!(worst < 4e-15, "{worst:e}");
    }

    /// Up to 64 bins, as (re, im).
    type Bins = [(f64, f64); 64];

    /// The transform of `x` (`[1, len, channels]`) by its definition, in f64.
    fn naive(x: &[f64], channels: usize, n: usize, inverse: bool) -> Bins {
        let mut out = [(0.0, 0.0); 64];
        let len = x.len() / channels;
        for (k, o) in out.iter_mut().enumerate().take(n) {
            let mut s = (0.0, 0.0);
            for j in 0..n.min(len) {
                let (re, im) = (x[j * channels], if channels == 2 { x[j * 2 + 1] } else { 0.0 });
                let a = if inverse { 1.0 } else { -1.0 } * core::f64::consts::TAU * (j * k) as f64
                    / n as f64;
                s.0 += re * a.cos() - im * a.sin();
                s.1 += re * a.sin() + im * a.cos();
            }
            let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
            *o = (s.0 * scale, s.1 * scale);
        }
        out
    }


    fn run(p: DftParams, x: &[f32], x_dims: &[usize]) -> ([f32; 256], usize) {
        let y_dims = out_dims(&p, x_dims).unwrap();
        let count: usize = y_dims.iter().product();
        let mut y = [f32::NAN; 256];
        validate(&p, x_dims, None, &y_dims).unwrap();
        dft(
            &p,
            In { data: x, dims: x_dims },
            None,
            Out {
                data: &mut y[..count],
                dims: &y_dims,
            },
        );
        (y, count)
    }

    fn signal(count: usize) -> [f32; 128] {
        let mut x = [0.0f32; 128];
        for (i, v) in x.iter_mut().enumerate().take(count) {
            // Deterministic, irregular values in [-1, 1).
            *v = ((i * 7919 + 13) % 101) as f32 / 50.5 - 1.0;
        }
        x
    }

    /// Every path (FFT and direct, real and complex, one-sided, inverse, cut and padded) against
    /// the definition.
    #[test]
    fn every_path_matches_the_definition() {
        for channels in [1usize, 2] {
            for (len, n) in [
                (16, 16),
                (12, 12),
                (8, 16),
                (20, 16),
                (1, 1),
                (2, 2),
                (7, 7),
                (32, 32),
                (30, 30),
                (49, 49),
                (26, 26),
                (34, 34),
                (40, 40),
                (10, 20),
            ] {
                for onesided in [false, true] {
                    for inverse in [false, true] {
                        if onesided && inverse {
                            continue; // (`the_inverse_of_a_one_sided_spectrum_is_the_signal`)
                        }
                        let p = DftParams {
                            axis: 1,
                            length: n as u32,
                            inverse,
                            onesided,
                            frame_step: 0,
                        };
                        let x = signal(len * channels);
                        let (y, count) = run(p, &x[..len * channels], &[1, len, channels]);
                        let x64: [f64; 128] = core::array::from_fn(|i| f64::from(x[i]));
                        let want = naive(&x64[..len * channels], channels, n, inverse);
                        assert_eq!(count, bins(&p) * 2);
                        for k in 0..bins(&p) {
                            let (re, im) = (y[2 * k], y[2 * k + 1]);
                            let err = (f64::from(re) - want[k].0).abs() + (f64::from(im) - want[k].1).abs();
                            assert!(
                                err < 1e-4,
                                "channels {channels} len {len} n {n} onesided {onesided} inverse {inverse} bin {k}: ({re}, {im}) vs {:?}",
                                want[k]
                            );
                        }
                    }
                }
            }
        }
    }

    /// An STFT is the DFT of each windowed frame.
    #[test]
    fn stft_frames_are_windowed_transforms() {
        let x = signal(40);
        let window: [f32; 16] = core::array::from_fn(|i| 0.5 - 0.5 * (i as f32 * 0.4).cos());
        let p = DftParams {
            axis: 1,
            length: 16,
            inverse: false,
            onesided: true,
            frame_step: 8,
        };
        let y_dims = out_dims(&p, &[1, 40, 1]).unwrap();
        assert_eq!(y_dims.as_slice(), &[1, 4, 9, 2]);
        validate(&p, &[1, 40, 1], Some(&[16]), &y_dims).unwrap();
        let mut y = [0.0f32; 72];
        dft(
            &p,
            In { data: &x[..40], dims: &[1, 40, 1] },
            Some(&window),
            Out { data: &mut y, dims: &y_dims },
        );
        for frame in 0..4 {
            let windowed: [f64; 16] =
                core::array::from_fn(|j| f64::from(x[frame * 8 + j]) * f64::from(window[j]));
            let want = naive(&windowed, 1, 16, false);
            for k in 0..9 {
                let got = (y[(frame * 9 + k) * 2], y[(frame * 9 + k) * 2 + 1]);
                assert!((f64::from(got.0) - want[k].0).abs() < 1e-4, "frame {frame} bin {k}");
                assert!((f64::from(got.1) - want[k].1).abs() < 1e-4, "frame {frame} bin {k}");
            }
        }
    }

    /// A DFT along an outer axis (strided bins) matches the same DFT along the inner one.
    #[test]
    fn a_strided_axis_is_transformed_per_lane() {
        let x = signal(24); // [1, 4, 3, 2]: transform axis 1 (length 4) for each of 3 lanes.
        let p = DftParams {
            axis: 1,
            length: 4,
            inverse: false,
            onesided: false,
            frame_step: 0,
        };
        let (y, _) = run(p, &x[..24], &[1, 4, 3, 2]);
        for lane in 0..3 {
            let column: [f64; 8] = core::array::from_fn(|i| {
                let (j, c) = (i / 2, i % 2);
                f64::from(x[(j * 3 + lane) * 2 + c])
            });
            let want = naive(&column, 2, 4, false);
            for (k, w) in want.iter().enumerate().take(4) {
                let at = (k * 3 + lane) * 2;
                assert!((f64::from(y[at]) - w.0).abs() < 1e-4);
                assert!((f64::from(y[at + 1]) - w.1).abs() < 1e-4);
            }
        }
    }

    /// The inverse of a real signal's one-sided spectrum (numpy's `irfft`) gives the signal back, for
    /// even and odd lengths.
    #[test]
    fn the_inverse_of_a_one_sided_spectrum_is_the_signal() {
        for n in [8usize, 9, 12, 1] {
            let x = signal(n);
            let x64: [f64; 128] = core::array::from_fn(|i| f64::from(x[i]));
            let spectrum = naive(&x64[..n], 1, n, false);
            let half = n / 2 + 1;
            let mut bins = [0.0f32; 2 * 64];
            for k in 0..half {
                bins[2 * k] = spectrum[k].0 as f32;
                bins[2 * k + 1] = spectrum[k].1 as f32;
            }
            let p = DftParams {
                axis: 1,
                length: n as u32,
                inverse: true,
                onesided: true,
                frame_step: 0,
            };
            let x_dims = [1, half, 2];
            let y_dims = out_dims(&p, &x_dims).unwrap();
            assert_eq!(y_dims.as_slice(), &[1, n, 1]);
            validate(&p, &x_dims, None, &y_dims).unwrap();
            let mut y = [f32::NAN; 64];
            dft(
                &p,
                In {
                    data: &bins[..2 * half],
                    dims: &x_dims,
                },
                None,
                Out {
                    data: &mut y[..n],
                    dims: &y_dims,
                },
            );
            for j in 0..n {
                assert!((y[j] - x[j]).abs() < 1e-5, "n {n} sample {j}: {} vs {}", y[j], x[j]);
            }
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        let p = DftParams {
            axis: 1,
            length: 8,
            inverse: false,
            onesided: true,
            frame_step: 0,
        };
        assert!(validate(&p, &[1, 8, 3], None, &[1, 5, 2]).is_err(), "3 channels");
        assert!(validate(&p, &[8, 1], None, &[5, 2]).is_err(), "axis is the complex one");
        let stft = DftParams { frame_step: 4, ..p };
        assert!(out_dims(&stft, &[1, 6, 1]).is_err(), "signal shorter than a frame");
        assert!(validate(&stft, &[1, 16, 1], Some(&[7]), &[1, 3, 5, 2]).is_err(), "window length");
    }
}
