//! Convolutions with few output channels (groups 1, strides and dilations 1), vectorized along the
//! output row instead of the output channels.
//!
//! The GEMM of [`super::conv`] puts the output channels in the vector lanes: with 2 output channels a
//! 16-lane tile computes 2 useful columns of 16, and the im2col copy costs more than the arithmetic (a
//! 3x3 convolution of 4 to 2 channels over 165 pixels: 4.2 µs, 6 GFLOP/s). Here a band of input rows is
//! copied once into planar, zero-padded form (`[C][rows][ld]`); each output row is then a sum over the
//! taps `(c, ky, kx)` of a weight times a contiguous run of a plane's row, so a vector covers `LANES`
//! adjacent output pixels and every weight is one broadcast. Up to four output channels share each
//! input load; more go four at a time. [`worth_it`] decides from the lanes each scheme wastes.

use ember_core::ops::nn::conv::Conv2dParams;
use ember_core::ops::Out;
use ember_core::Parallel;

use crate::gemm::lanes::{clip_bounds, Lanes};
use crate::par::{self, Shared};
use crate::scratch::{line_stride, Carve};

use super::tensors::Tensors;

/// Output channels that share the input loads in one pass of [`narrow_row`].
pub(crate) const CHANNELS: usize = 4;

/// Output rows per call of [`narrow_row`].
pub(crate) const ROWS: usize = 4;

/// Planar band values per worker (128 KiB): the band stays in L2 while its rows are computed.
const BAND_FLOATS: usize = 32 * 1024;

/// Multiply-adds below which a second worker is not worth waking.
const MIN_WORK_PER_WORKER: usize = 1 << 16;

/// Up to [`ROWS`] output rows of a narrow convolution, for up to [`CHANNELS`] output channels.
pub(crate) struct NarrowArgs {
    /// The planar band: plane `ch` (of `c`) starts at `x + ch * plane`, its rows `ld` values apart.
    /// Row `r` of a plane is the padded input row under kernel row 0 of the band's `r`-th output row.
    pub x: *const f32,
    /// Input channels.
    pub c: usize,
    /// Values per plane.
    pub plane: usize,
    /// Values per plane row: at least `ow` rounded up to whole vectors, plus `kw - 1`.
    pub ld: usize,
    /// Band row of kernel row 0 of the first output row.
    pub row: usize,
    /// Output rows (1 to [`ROWS`]).
    pub rows: usize,
    /// Weights of the first output channel, OHWI (`[KH][KW][C]` per channel, `k` apart).
    pub w: *const f32,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Weights per output channel (`kh * kw * c`).
    pub k: usize,
    /// Output channels in this pass (1 to [`CHANNELS`]).
    pub n: usize,
    /// `n` bias values, or null.
    pub bias: *const f32,
    /// Output pixel 0, channel 0 of this pass in the first row; pixels are `ldy` values apart, rows
    /// `ldr`.
    pub y: *mut f32,
    /// Values per output row.
    pub ldr: usize,
    /// Values per output pixel (all output channels).
    pub ldy: usize,
    /// Output width.
    pub ow: usize,
    /// Lower clip bound.
    pub lo: f32,
    /// Upper clip bound.
    pub hi: f32,
}

/// A narrow row kernel, [`narrow_row`] at one level.
pub(crate) type NarrowFn = unsafe fn(&NarrowArgs);

/// Computes the output rows (see [`NarrowArgs`]).
///
/// # Safety
///
/// The level `S` runs on this CPU; `x` holds `c` planes of `plane` values, each with rows `row` to
/// `row + rows + kh - 2` of `ld` values; `w` holds `n * k` values and `bias` (unless null) `n`; `y` is
/// valid for writes at `r * ldr + px * ldy + j` for `r < rows`, `px < ow`, `j < n`;
/// `ld >= ow.next_multiple_of(S::LANES) + kw - 1`; `1 <= rows <= ROWS`.
#[inline(always)]
pub(crate) unsafe fn narrow_row<S: Lanes>(d: &NarrowArgs) {
    // Sums in registers: `N * R` accumulators, `R` input vectors and a broadcast, at most 13, which
    // the 16 registers of SSE2 and AVX2 hold.
    // SAFETY: forwarded contract.
    unsafe {
        match d.n {
            1 => rows_pass::<S, 1, 4>(d),
            2 => rows_pass::<S, 2, 4>(d),
            3 => rows_pass::<S, 3, 2>(d),
            _ => rows_pass::<S, CHANNELS, 2>(d),
        }
    }
}

/// [`narrow_row`] for `N` output channels, `R` rows at a time (missing rows repeat the last and are not
/// stored), so that `N * R` independent sums hide the latency of the multiply-adds and each weight
/// broadcast serves `R` rows.
///
/// # Safety
///
/// As [`narrow_row`], with `N == d.n`.
#[inline(always)]
unsafe fn rows_pass<S: Lanes, const N: usize, const R: usize>(d: &NarrowArgs) {
    let lanes = S::LANES;
    // SAFETY: every load reads plane `ch`, a row from `row` to `row + rows + kh - 2`, columns
    // `ox + kx .. ox + kx + LANES` with `ox + LANES <= ow` rounded up to whole vectors, so below `ld`
    // (the caller's contract); the weights and bias read are the `n * k` and `n` values the contract
    // names; the stores write rows below `rows`, pixels below `ow`, channels below `n`.
    unsafe {
        let init: [S::V; N] = core::array::from_fn(|j| match d.bias.is_null() {
            true => S::zero(),
            false => S::splat(*d.bias.add(j)),
        });
        let (lo, hi) = (S::splat(d.lo), S::splat(d.hi));
        let mut lanes_out = [0.0f32; 64];
        for r0 in (0..d.rows).step_by(R) {
            let rows = (d.rows - r0).min(R);
            let first: [usize; R] = core::array::from_fn(|r| (d.row + r0 + r.min(rows - 1)) * d.ld);
            let mut ox = 0;
            while ox < d.ow {
                let mut acc: [[S::V; R]; N] = core::array::from_fn(|j| [init[j]; R]);
                for ch in 0..d.c {
                    let plane = d.x.add(ch * d.plane + ox);
                    for ky in 0..d.kh {
                        let taps = (ky * d.kw) * d.c + ch;
                        for kx in 0..d.kw {
                            let at = ky * d.ld + kx;
                            let xv: [S::V; R] =
                                core::array::from_fn(|r| S::load(plane.add(first[r] + at)));
                            let wp = d.w.add(taps + kx * d.c);
                            for (j, acc_j) in acc.iter_mut().enumerate() {
                                let wv = S::broadcast(wp.add(j * d.k));
                                for (a, &x) in acc_j.iter_mut().zip(&xv) {
                                    *a = S::mul_add(x, wv, *a);
                                }
                            }
                        }
                    }
                }
                let valid = (d.ow - ox).min(lanes);
                for (j, acc_j) in acc.iter().enumerate() {
                    for (r, a) in acc_j.iter().enumerate().take(rows) {
                        S::store(lanes_out.as_mut_ptr(), S::clamp(*a, lo, hi));
                        let out = d.y.add((r0 + r) * d.ldr + ox * d.ldy + j);
                        for (p, &v) in lanes_out[..valid].iter().enumerate() {
                            *out.add(p * d.ldy) = v;
                        }
                    }
                }
                ox += lanes;
            }
        }
    }
}

/// Whether a convolution of these shapes (groups 1, checked by `conv::validate`) runs here rather than
/// through im2col and the GEMM: strides and dilations 1, and the lanes it fills against those the GEMM
/// fills (output channels in vectors of `lanes`), with a margin for the GEMM's better register reuse.
pub(crate) fn worth_it(p: &Conv2dParams, w: &[usize], y: &[usize], lanes: usize) -> bool {
    let unit = [p.stride_h, p.stride_w, p.dilation_h, p.dilation_w] == [1; 4];
    let (oc, oh, ow) = (w[0], y[1], y[2]);
    // Lane-multiply-adds per tap: this scheme runs `oc` channels over whole vectors of the row; the
    // GEMM runs every pixel over whole vectors of the channels.
    let narrow = oh * ow.next_multiple_of(lanes) * oc;
    let gemm = oh * ow * oc.next_multiple_of(lanes);
    let kernel = w[1] >= 1 && w[2] >= 1;
    unit && kernel && p.groups == 1 && oc <= 2 * CHANNELS && 4 * narrow <= 3 * gemm
}

/// Shapes of a narrow convolution, as the kernel and its scratch function see them.
pub(crate) struct Narrow {
    /// Batch, input height, width, channels.
    x: [usize; 4],
    /// Output channels.
    oc: usize,
    /// Output height and width.
    out: (usize, usize),
    /// Kernel height and width.
    k: (usize, usize),
    /// Values per planar row.
    ld: usize,
    /// Output rows per band.
    band: usize,
    /// Workers the op is split over.
    workers: usize,
}

impl Narrow {
    /// The plan for input `x`, weights `w` `[OC, KH, KW, IC]`, output `y` (shapes that passed
    /// [`worth_it`]) at `lanes` f32 per vector, on up to `workers` workers.
    pub(crate) fn new(x: &[usize], w: &[usize], y: &[usize], lanes: usize, workers: usize) -> Self {
        let (oh, ow) = (y[1], y[2]);
        let (kh, kw) = (w[1], w[2]);
        let c = x[3];
        let ld = ow.next_multiple_of(lanes.max(1)) + kw - 1;
        let band = (BAND_FLOATS / (c * ld).max(1))
            .saturating_sub(kh - 1)
            .clamp(1, oh.max(1));
        let work = y.iter().product::<usize>() * kh * kw * c;
        let rows = y[0] * oh;
        Narrow {
            x: [x[0], x[1], x[2], c],
            oc: w[0],
            out: (oh, ow),
            k: (kh, kw),
            ld,
            band,
            workers: par::workers_for(work, MIN_WORK_PER_WORKER, workers)
                .min(rows.div_ceil(band).max(1)),
        }
    }

    /// Values of one worker's planar band.
    fn band_len(&self) -> usize {
        self.x[3] * (self.band + self.k.0 - 1) * self.ld
    }

    /// Lengths of the scratch buffers: one planar band per worker.
    pub(crate) fn scratch_lens(&self) -> [usize; 1] {
        [self.workers * line_stride(self.band_len())]
    }

    /// `y = act(conv(x, w) + b)` with a level's row kernel (`Level::narrow`, of a level that runs on
    /// this CPU); `false` (nothing written) when `scratch` is too short.
    pub(crate) fn run(
        &self,
        kernel: NarrowFn,
        p: &Conv2dParams,
        Tensors { x, w, b }: Tensors<'_>,
        y: Out<'_>,
        scratch: &mut Carve<'_>,
        par: Option<&dyn Parallel>,
    ) -> bool {
        let [batch, _, _, c] = self.x;
        let (oh, ow) = self.out;
        let (kh, kw) = self.k;
        let (oc, band) = (self.oc, self.band);
        let Some([bands]) = scratch.take_all(self.scratch_lens()) else {
            return false;
        };
        let (lo, hi) = clip_bounds(p.act);
        let bands = Shared::new(bands);
        let y_shared = Shared::new(y.data);
        let plane = (band + kh - 1) * self.ld;
        par::ranges(par, self.workers, batch * oh, band, &|mine, worker| {
            let start = worker * line_stride(self.band_len());
            // SAFETY: each worker takes its own band buffer (its calls do not overlap).
            let buf = unsafe { bands.part(start..start + self.band_len()) };
            let out_row = ow * oc;
            // SAFETY: the ranges of output rows are disjoint.
            let y_rows = unsafe { y_shared.part(mine.start * out_row..mine.end * out_row) };
            let mut r = mine.start;
            while r < mine.end {
                // A band: output rows of one image, at most `band` of them.
                let (n, oy0) = (r / oh, r % oh);
                let rows = band.min(oh - oy0).min(mine.end - r);
                self.fill(p, x.data, n, oy0, rows + kh - 1, plane, buf);
                for i in (0..rows).step_by(ROWS) {
                    let y_row = &mut y_rows[(r + i - mine.start) * out_row..];
                    for j0 in (0..oc).step_by(CHANNELS) {
                        let args = NarrowArgs {
                            x: buf.as_ptr(),
                            c,
                            plane,
                            ld: self.ld,
                            row: i,
                            rows: (rows - i).min(ROWS),
                            w: w.data[j0 * kh * kw * c..].as_ptr(),
                            kh,
                            kw,
                            k: kh * kw * c,
                            n: (oc - j0).min(CHANNELS),
                            bias: b.map_or(core::ptr::null(), |b| b[j0..].as_ptr()),
                            y: y_row[j0..].as_mut_ptr(),
                            ldr: out_row,
                            ldy: oc,
                            ow,
                            lo,
                            hi,
                        };
                        // SAFETY: the band holds `c` planes of rows `i..i + rows + kh - 1` of `ld`
                        // values (`fill` wrote the band's `rows + kh - 1`, and `ld` covers whole vectors
                        // past `ow` plus `kw - 1`); the weights of channels `j0..j0 + n` and their bias
                        // are in bounds; the output rows `r + i..` (at most `rows - i`) of `ow` pixels
                        // of `oc` values are this worker's; the level runs on this CPU (checked when
                        // the op started).
                        unsafe { kernel(&args) };
                    }
                }
                r += rows;
            }
        });
        true
    }

    /// Writes `rows` planar rows of image `n`, those under kernel row 0 of output rows `oy0..`, into
    /// `buf` (`c` planes of `plane` values): zeros for the padding and past the input's right edge.
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &self,
        p: &Conv2dParams,
        x: &[f32],
        n: usize,
        oy0: usize,
        rows: usize,
        plane: usize,
        buf: &mut [f32],
    ) {
        let [_, h, wid, c] = self.x;
        let (pad_top, pad_left) = (usize::from(p.pad_top), usize::from(p.pad_left));
        let image = &x[n * h * wid * c..][..h * wid * c];
        for r in 0..rows {
            let iy = (oy0 + r).checked_sub(pad_top).filter(|&iy| iy < h);
            for ch in 0..c {
                let line = &mut buf[ch * plane + r * self.ld..][..self.ld];
                let Some(iy) = iy else {
                    line.fill(0.0);
                    continue;
                };
                let (left, rest) = line.split_at_mut(pad_left);
                let (inside, right) = rest.split_at_mut(wid);
                left.fill(0.0);
                right.fill(0.0);
                // (An input of width 0 has nothing to copy: `inside` is empty.)
                let src = image.get(iy * wid * c + ch..).unwrap_or_default();
                for (d, &v) in inside.iter_mut().zip(src.iter().step_by(c)) {
                    *d = v;
                }
            }
        }
    }
}
