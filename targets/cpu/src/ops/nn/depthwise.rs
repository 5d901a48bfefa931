//! Depthwise 2-D convolution (groups == input channels, any channel multiplier) over NHWC, vectorized
//! along the channels, which NHWC keeps contiguous.
//!
//! The weights `[OC, KH, KW, 1]` are repacked per call into `[multiplier][KH * KW][IC]` (one contiguous
//! vector of channels per tap), and the bias into `[multiplier][IC]`. A row kernel ([`depthwise_row`])
//! computes one output row for one multiplier index: for each pixel, blocks of channels accumulate over
//! the taps in registers, then get the bias and the clip. The taps that fall in the padding are cut
//! once per row (kernel rows) and per pixel only at the left and right borders: the interior pixels run
//! the whole kernel width with no test at all. With a multiplier above 1, output channel `c * m + j`
//! reads input channel `c`: the row kernel writes `[OW, IC]` into scratch for each `j`, and the rows are
//! interleaved into the output.

use ember_core::ops::nn::conv::Conv2dParams;
use ember_core::ops::Out;
use ember_core::Parallel;

use crate::gemm::lanes::{clamp1, clip_bounds, Lanes};
use crate::par::{self, Shared};
use crate::scratch::{line_stride, Carve};

use super::tensors::Tensors;

/// One output row of a depthwise convolution (one multiplier index).
pub(crate) struct DepthwiseArgs {
    /// The input image `[H, W, C]` (row-major, `h * w * c` readable values).
    pub x: *const f32,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Channels.
    pub c: usize,
    /// Repacked weights `[KH * KW][C]`.
    pub taps: *const f32,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// `C` bias values.
    pub bias: *const f32,
    /// The output row `[OW, C]`.
    pub y: *mut f32,
    /// Output width.
    pub ow: usize,
    /// Output row index.
    pub oy: usize,
    /// Strides `(h, w)`.
    pub stride: (usize, usize),
    /// Dilations `(h, w)`.
    pub dilation: (usize, usize),
    /// Padding `(top, left)`.
    pub pad: (usize, usize),
    /// Clip bounds.
    pub lo: f32,
    /// Upper clip bound.
    pub hi: f32,
}

impl DepthwiseArgs {
    /// The input values and the weights of tap `(ky, kx)` of output pixel `ox`, from channel `ch` on.
    ///
    /// # Safety
    ///
    /// The tap is one [`valid_taps`] keeps for this pixel (its input pixel is inside the image), and
    /// `ch < c`: both pointers are then inside `x` and `taps`.
    #[inline(always)]
    unsafe fn tap(&self, ox: usize, ky: usize, kx: usize, ch: usize) -> (*const f32, *const f32) {
        let iy = self.oy * self.stride.0 + ky * self.dilation.0 - self.pad.0;
        let ix = ox * self.stride.1 + kx * self.dilation.1 - self.pad.1;
        // SAFETY: the caller's contract.
        unsafe {
            (
                self.x.add((iy * self.w + ix) * self.c + ch),
                self.taps.add((ky * self.kw + kx) * self.c + ch),
            )
        }
    }
}

/// A depthwise row kernel, [`depthwise_row`] at one level.
pub(crate) type DepthwiseFn = unsafe fn(&DepthwiseArgs);

/// The kernel positions `k` along one axis whose input `o * stride + k * dilation - pad` lies in
/// `0..size`, as a range `k0..k1` (possibly empty).
fn valid_taps(
    o: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    k: usize,
    size: usize,
) -> (usize, usize) {
    let start = o * stride; // in padded coordinates
                            // First tap at or after the padding: start + k * dilation >= pad.
    let k0 = pad.saturating_sub(start).div_ceil(dilation).min(k);
    // Taps before the end: start + k * dilation < pad + size.
    let k1 = match (pad + size).checked_sub(start + 1) {
        Some(room) => (room / dilation + 1).min(k),
        None => 0,
    };
    (k0, k1.max(k0))
}

/// Computes one output row (see [`DepthwiseArgs`]).
///
/// # Safety
///
/// The level `S` runs on this CPU; the pointers of `d` are valid as documented there, and the
/// geometry is that of a convolution that passed `conv::validate` (every tap kept by [`valid_taps`]
/// reads inside the image).
#[inline(always)]
pub(crate) unsafe fn depthwise_row<S: Lanes, T: Lanes>(d: &DepthwiseArgs) {
    let (ky0, ky1) = valid_taps(d.oy, d.stride.0, d.dilation.0, d.pad.0, d.kh, d.h);
    // The interior: pixels whose every kernel column is inside the image.
    let span = (d.kw - 1) * d.dilation.1;
    let first = d.pad.1.div_ceil(d.stride.1).min(d.ow);
    let last = match (d.w + d.pad.1).checked_sub(span + 1) {
        Some(room) => (room / d.stride.1 + 1).min(d.ow),
        None => 0,
    }
    .max(first);
    // SAFETY: forwarded contract; `pixel` reads only the taps `valid_taps` keeps.
    unsafe {
        for ox in (0..first).chain(last..d.ow) {
            let (kx0, kx1) = valid_taps(ox, d.stride.1, d.dilation.1, d.pad.1, d.kw, d.w);
            pixel::<S, T>(d, ox, (ky0, ky1), (kx0, kx1));
        }
        // Interior pixels four at a time, sharing each tap's weights; the rest one at a time.
        let mut ox = first;
        while ox + 6 <= last {
            let mut ch = 0;
            while ch + 2 * S::LANES <= d.c {
                interior::<S, 6, 2>(d, ox, (ky0, ky1), ch);
                ch += 2 * S::LANES;
            }
            while ch + S::LANES <= d.c {
                interior::<S, 6, 1>(d, ox, (ky0, ky1), ch);
                ch += S::LANES;
            }
            while ch + T::LANES <= d.c {
                interior::<T, 6, 1>(d, ox, (ky0, ky1), ch);
                ch += T::LANES;
            }
            if ch < d.c {
                for p in ox..ox + 6 {
                    pixel_channels(d, p, (ky0, ky1), (0, d.kw), ch);
                }
            }
            ox += 6;
        }
        for ox in ox..last {
            pixel::<S, T>(d, ox, (ky0, ky1), (0, d.kw));
        }
    }
}

/// `P` interior output pixels from `ox` on (every kernel column inside the image), channels
/// `ch..ch + V * LANES`: for each tap, its `V` weight vectors are loaded once for the `P` pixels, so a
/// multiply-add costs little more than one load (instead of two).
///
/// # Safety
///
/// As [`depthwise_row`]; the pixels are interior and the channels inside `c`.
#[inline(always)]
unsafe fn interior<S: Lanes, const P: usize, const V: usize>(
    d: &DepthwiseArgs,
    ox: usize,
    (ky0, ky1): (usize, usize),
    ch: usize,
) {
    let lanes = S::LANES;
    let c = d.c;
    let step = d.stride.1 * c;
    // SAFETY: (caller) the taps ky0..ky1 and every kx of pixels ox..ox + P read inside the image, and
    // the channels ch..ch + V * LANES are inside `c`.
    unsafe {
        let bias: [S::V; V] = core::array::from_fn(|v| S::load(d.bias.add(ch + v * lanes)));
        let mut acc = [bias; P];
        for ky in ky0..ky1 {
            let iy = d.oy * d.stride.0 + ky * d.dilation.0 - d.pad.0;
            let row = d.x.add(iy * d.w * c + ch);
            for kx in 0..d.kw {
                let wp = d.taps.add((ky * d.kw + kx) * c + ch);
                let wv: [S::V; V] = core::array::from_fn(|v| S::load(wp.add(v * lanes)));
                let ix = ox * d.stride.1 + kx * d.dilation.1 - d.pad.1;
                let xp = row.add(ix * c);
                for (p, acc_p) in acc.iter_mut().enumerate() {
                    for (v, a) in acc_p.iter_mut().enumerate() {
                        *a = S::mul_add(S::load(xp.add(p * step + v * lanes)), wv[v], *a);
                    }
                }
            }
        }
        let (lo, hi) = (S::splat(d.lo), S::splat(d.hi));
        for (p, acc_p) in acc.iter().enumerate() {
            let out = d.y.add((ox + p) * c + ch);
            for (v, a) in acc_p.iter().enumerate() {
                S::store(out.add(v * lanes), S::clamp(*a, lo, hi));
            }
        }
    }
}

/// One output pixel over the kernel rows `ky` and columns `kx`, channels in blocks of 4, then 1 vectors,
/// then vectors of `T`, then one at a time.
#[inline(always)]
unsafe fn pixel<S: Lanes, T: Lanes>(
    d: &DepthwiseArgs,
    ox: usize,
    (ky0, ky1): (usize, usize),
    (kx0, kx1): (usize, usize),
) {
    let lanes = S::LANES;
    let c = d.c;
    // SAFETY: (caller) every kept tap (ky, kx) has its input pixel inside the image, so `d.tap` is in
    // bounds; weights, bias and output hold `c` values per tap / pixel.
    unsafe {
        let out = d.y.add(ox * c);
        let (lo, hi) = (S::splat(d.lo), S::splat(d.hi));
        let mut ch = 0;
        while ch + 4 * lanes <= c {
            let mut acc: [S::V; 4] = core::array::from_fn(|v| S::load(d.bias.add(ch + v * lanes)));
            for ky in ky0..ky1 {
                for kx in kx0..kx1 {
                    let (xp, wp) = d.tap(ox, ky, kx, ch);
                    for (v, a) in acc.iter_mut().enumerate() {
                        *a = S::mul_add(S::load(xp.add(v * lanes)), S::load(wp.add(v * lanes)), *a);
                    }
                }
            }
            for (v, a) in acc.iter().enumerate() {
                S::store(out.add(ch + v * lanes), S::clamp(*a, lo, hi));
            }
            ch += 4 * lanes;
        }
        while ch + lanes <= c {
            pixel_vector::<S>(d, ox, (ky0, ky1), (kx0, kx1), ch);
            ch += lanes;
        }
        while ch + T::LANES <= c {
            pixel_vector::<T>(d, ox, (ky0, ky1), (kx0, kx1), ch);
            ch += T::LANES;
        }
        pixel_channels(d, ox, (ky0, ky1), (kx0, kx1), ch);
    }
}

/// Channels `ch..ch + LANES` of one output pixel.
///
/// # Safety
///
/// As [`pixel`], with `ch + LANES <= c`.
#[inline(always)]
unsafe fn pixel_vector<S: Lanes>(
    d: &DepthwiseArgs,
    ox: usize,
    (ky0, ky1): (usize, usize),
    (kx0, kx1): (usize, usize),
    ch: usize,
) {
    // SAFETY: as in `pixel`: every kept tap reads inside the image; the channels are inside `c`.
    unsafe {
        let mut acc = S::load(d.bias.add(ch));
        for ky in ky0..ky1 {
            for kx in kx0..kx1 {
                let (xp, wp) = d.tap(ox, ky, kx, ch);
                acc = S::mul_add(S::load(xp), S::load(wp), acc);
            }
        }
        S::store(
            d.y.add(ox * d.c + ch),
            S::clamp(acc, S::splat(d.lo), S::splat(d.hi)),
        );
    }
}

/// Channels `ch..` of one output pixel (the channels past the last whole vector), four at a time and
/// then one at a time, with the taps outside and the channels inside: fixed-size groups, so that the
/// sums stay in registers (a group of variable size went through memory, at a store-forwarding stall
/// per tap). Each channel's sum starts from its bias and adds the taps in order, as the vector paths
/// and the reference do.
///
/// # Safety
///
/// As [`pixel`].
#[inline(always)]
unsafe fn pixel_channels(
    d: &DepthwiseArgs,
    ox: usize,
    ky: (usize, usize),
    kx: (usize, usize),
    mut ch: usize,
) {
    // SAFETY: forwarded contract; each group's channels are inside `c`.
    unsafe {
        while ch + 4 <= d.c {
            pixel_group::<4>(d, ox, ky, kx, ch);
            ch += 4;
        }
        while ch < d.c {
            pixel_group::<1>(d, ox, ky, kx, ch);
            ch += 1;
        }
    }
}

/// Channels `ch..ch + N` of one output pixel, in scalar arithmetic.
///
/// # Safety
///
/// As [`pixel`], with `ch + N <= c`.
#[inline(always)]
unsafe fn pixel_group<const N: usize>(
    d: &DepthwiseArgs,
    ox: usize,
    (ky0, ky1): (usize, usize),
    (kx0, kx1): (usize, usize),
    ch: usize,
) {
    // SAFETY: as in `pixel`: every kept tap reads inside the image; the channels ch..ch + N are inside
    // `c`.
    unsafe {
        let mut acc: [f32; N] = core::array::from_fn(|j| *d.bias.add(ch + j));
        for ky in ky0..ky1 {
            for kx in kx0..kx1 {
                let (xp, wp) = d.tap(ox, ky, kx, ch);
                for (j, a) in acc.iter_mut().enumerate() {
                    *a += *xp.add(j) * *wp.add(j);
                }
            }
        }
        let out = d.y.add(ox * d.c + ch);
        for (j, &a) in acc.iter().enumerate() {
            *out.add(j) = clamp1(a, d.lo, d.hi);
        }
    }
}

/// Multiply-adds below which a worker is not worth waking for a depthwise convolution: a quarter of
/// the GEMM's figure, as a depthwise multiply-add costs about four of a GEMM's (one load of the input
/// each, no register reuse across output channels). PP-OCRv4's detector: its 80x80x16 and 40x40x48
/// layers (0.9 and 0.7 M multiply-adds) ran on one thread at any thread count before.
const MIN_WORK_PER_WORKER: usize = 1 << 17;

/// Shapes of a depthwise convolution, as the kernel and its scratch function see them.
pub(crate) struct Depthwise {
    /// Batch, input height, width, channels.
    x: [usize; 4],
    /// Output height and width.
    out: (usize, usize),
    /// Kernel height and width.
    k: (usize, usize),
    /// Output channels per input channel.
    multiplier: usize,
    /// Workers the op is split over.
    workers: usize,
}

impl Depthwise {
    /// The plan for input `x`, weights `w` `[OC, KH, KW, 1]`, output `y`, on up to `workers` workers.
    pub(crate) fn new(x: &[usize], w: &[usize], y: &[usize], workers: usize) -> Self {
        let multiplier = w[0] / x[3].max(1);
        let work = y.iter().product::<usize>() * w[1] * w[2];
        Depthwise {
            x: [x[0], x[1], x[2], x[3]],
            out: (y[1], y[2]),
            k: (w[1], w[2]),
            multiplier,
            workers: par::workers_for(work, MIN_WORK_PER_WORKER, workers),
        }
    }

    /// Lengths of the scratch buffers: repacked weights, bias, and with a multiplier, one output row
    /// per worker.
    pub(crate) fn scratch_lens(&self) -> [usize; 3] {
        let oc = self.x[3] * self.multiplier;
        let rows = if self.multiplier > 1 {
            self.workers * line_stride(self.out.1 * self.x[3])
        } else {
            0
        };
        [self.k.0 * self.k.1 * oc, oc, rows]
    }

    /// `y = act(depthwise(x, w) + b)` with a level's row kernel (`Level::depthwise`, of a level that
    /// runs on this CPU); `false` (nothing written) when `scratch` is too short.
    pub(crate) fn run(
        &self,
        kernel: DepthwiseFn,
        p: &Conv2dParams,
        Tensors { x, w, b }: Tensors<'_>,
        y: Out<'_>,
        scratch: &mut Carve<'_>,
        par: Option<&dyn Parallel>,
    ) -> bool {
        let [batch, h, wid, c] = self.x;
        let (oh, ow) = self.out;
        let (kh, kw) = self.k;
        let m = self.multiplier;
        let taps_n = kh * kw;
        let Some([taps, bias, rows]) = scratch.take_all(self.scratch_lens()) else {
            return false;
        };
        // taps[j][t][ch] = w[ch * m + j, t]; bias[j][ch] = b[ch * m + j].
        for (ch, w_ch) in w.data.chunks_exact(m * taps_n).enumerate() {
            for (j, w_oc) in w_ch.chunks_exact(taps_n).enumerate() {
                for (t, &v) in w_oc.iter().enumerate() {
                    taps[(j * taps_n + t) * c + ch] = v;
                }
            }
        }
        match b {
            Some(b) => {
                for (ch, b_ch) in b.chunks_exact(m).enumerate() {
                    for (j, &v) in b_ch.iter().enumerate() {
                        bias[j * c + ch] = v;
                    }
                }
            }
            None => bias.fill(0.0),
        }
        let (lo, hi) = clip_bounds(p.act);
        let (taps, bias) = (&*taps, &*bias);
        let rows = Shared::new(rows);
        let y_shared = Shared::new(y.data);
        let total_rows = batch * oh;
        par::ranges(par, self.workers, total_rows, 1, &|mine, worker| {
            let out_row = ow * c * m;
            // SAFETY: the ranges of output rows are disjoint.
            let y_rows = unsafe { y_shared.part(mine.start * out_row..mine.end * out_row) };
            let buf: &mut [f32] = match m {
                1 => &mut [],
                // SAFETY: each worker takes its own row buffer (its calls do not overlap).
                _ => unsafe {
                    let start = worker * line_stride(ow * c);
                    rows.part(start..start + ow * c)
                },
            };
            for (r, y_row) in mine.clone().zip(y_rows.chunks_exact_mut(out_row)) {
                let (n, oy) = (r / oh, r % oh);
                for j in 0..m {
                    let dst = if m == 1 { &mut *y_row } else { &mut *buf };
                    let args = DepthwiseArgs {
                        x: x.data[n * h * wid * c..].as_ptr(),
                        h,
                        w: wid,
                        c,
                        taps: taps[j * taps_n * c..].as_ptr(),
                        kh,
                        kw,
                        bias: bias[j * c..].as_ptr(),
                        y: dst.as_mut_ptr(),
                        ow,
                        oy,
                        stride: (p.stride_h.into(), p.stride_w.into()),
                        dilation: (p.dilation_h.into(), p.dilation_w.into()),
                        pad: (p.pad_top.into(), p.pad_left.into()),
                        lo,
                        hi,
                    };
                    // SAFETY: image n of `x`, the repacked weights and bias of index j, and an output
                    // row of ow * c values are in bounds; the geometry passed `conv::validate`; the
                    // level runs on this CPU (checked when the op started).
                    unsafe { kernel(&args) };
                    if m > 1 {
                        for (px, src) in y_row.chunks_exact_mut(c * m).zip(buf.chunks_exact(c)) {
                            for (ch, &v) in src.iter().enumerate() {
                                px[ch * m + j] = v;
                            }
                        }
                    }
                }
            }
        });
        true
    }
}
