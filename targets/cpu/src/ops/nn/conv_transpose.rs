//! 2-D transposed convolution over NHWC as GEMM + col2im: for a tile of input pixels, one GEMM gives
//! every tap's contribution, `cols[pixel, (ky, kx, oc)] = sum_c x[pixel, c] * w[oc, ky, kx, c]`, and each
//! is added to the output pixel the tap lands on. The output starts as the bias; the activation is a
//! last pass, since an output sums several taps (from several tiles) before it.
//!
//! The weights of a group are reordered per call into `[KH * KW * OCg, ICg]` (rows in `(tap, oc)` order,
//! so that one tap's output channels are contiguous in `cols`), then packed. The GEMM of a tile is split
//! over the workers by rows; the scatter by output rows, each worker adding the taps that land in its
//! rows in input order, as one worker would: the result does not depend on the number of workers.

use core::ops::Range;

use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::conv_transpose::{self as reference, ConvTranspose2dParams};
use ember_core::ops::Out;
use ember_core::{Parallel, Workspace};

use crate::gemm::{AMat, BMat, COut, Epilogue, Gemm, MIN_WORK_PER_WORKER};
use crate::level::Level;
use crate::par::{self, Shared};
use crate::scratch::{bytes_for, Carve};

use super::{run_or_fall_back, Tensors};

/// `cols` values per tile (128 KiB).
const COLS_FLOATS: usize = 32 * 1024;

/// Additions per worker below which the scatter (and the activation pass) stays on fewer workers: a
/// few microseconds of memory-bound adds, about what handing a part to a worker costs.
const MIN_ADDS_PER_WORKER: usize = 1 << 13;

/// How one transposed convolution runs.
struct Plan {
    groups: usize,
    icg: usize,
    ocg: usize,
    /// Kernel taps, `KH * KW`.
    taps: usize,
    /// Kernel width.
    kw: usize,
    /// The GEMM of one tile: `m` input pixels, `n = taps * ocg`, `k = icg`.
    gemm: Gemm,
    /// Input pixels in all.
    pixels: usize,
    /// Workers a tile's GEMM is split over.
    workers: usize,
    /// Workers a tile's scatter is split over.
    scatter_workers: usize,
}

impl Plan {
    fn new(level: &'static Level, x: &[usize], w: &[usize], workers: usize) -> Plan {
        let groups = x[3] / w[3].max(1);
        let groups = if w[3] == 0 { 1 } else { groups };
        let (icg, ocg, taps) = (w[3], w[0] / groups, w[1] * w[2]);
        let n = taps * ocg;
        let pixels = x[0] * x[1] * x[2];
        let tile = (COLS_FLOATS / n.max(1)).clamp(1, pixels.max(1));
        let work = tile * n * icg.max(1);
        Plan {
            groups,
            icg,
            ocg,
            taps,
            kw: w[2],
            gemm: Gemm::new(level, tile, n, icg),
            pixels,
            workers: par::workers_for(work, MIN_WORK_PER_WORKER, workers),
            scatter_workers: par::workers_for(tile * n, MIN_ADDS_PER_WORKER, workers),
        }
    }

    /// Lengths of the scratch buffers: reordered weights, packed weights, one tile of `cols`.
    fn scratch_lens(&self) -> [usize; 3] {
        let (n, k) = (self.gemm.n, self.gemm.k);
        [n * k, self.gemm.packed_len(), self.gemm.m * n]
    }
}

/// Scratch bytes `conv_transpose2d` asks for on `level` with `workers` workers.
pub(crate) fn scratch_bytes(
    level: &'static Level,
    x: &[usize],
    w: &[usize],
    workers: usize,
) -> usize {
    bytes_for(&Plan::new(level, x, w, workers).scratch_lens())
}

/// `y = act(conv_transpose(x, w) + b)` with `level`'s kernels; the reference kernel without enough
/// scratch.
pub(crate) fn conv_transpose2d(
    level: &'static Level,
    p: &ConvTranspose2dParams,
    t: Tensors<'_>,
    y: Out<'_>,
    ws: Option<&mut Workspace<'_>>,
) {
    let run = |workers, y: Out<'_>, scratch: &mut Carve<'_>, par: Option<&dyn Parallel>| {
        Plan::new(level, t.x.dims, t.w.dims, workers).run(p, t, y, scratch, par)
    };
    run_or_fall_back(level, y, ws, run, |y| {
        reference::conv_transpose2d(p, t.x, t.w, t.b, y)
    })
}

/// What [`Plan::scatter`] adds: the tile's `cols` (one row of `taps * ocg` values per input pixel of
/// `rows`, for group `group`), into an output of dims `y` from an input of dims `x`.
struct Scatter<'a> {
    p: &'a ConvTranspose2dParams,
    x: &'a [usize],
    y: &'a [usize],
    rows: Range<usize>,
    group: usize,
    cols: &'a [f32],
}

impl Plan {
    /// Runs the plan; `false` (nothing written) when the scratch is too short.
    fn run(
        &self,
        p: &ConvTranspose2dParams,
        Tensors { x, w, b }: Tensors<'_>,
        y: Out<'_>,
        scratch: &mut Carve<'_>,
        par: Option<&dyn Parallel>,
    ) -> bool {
        let g = &self.gemm;
        let k = g.k;
        let Some([reordered, packed, cols]) = scratch.take_all(self.scratch_lens()) else {
            return false;
        };
        let ic = x.dims[3];
        match b {
            Some(b) => fill_repeat(y.data, b),
            None => y.data.fill(0.0),
        }
        for group in 0..self.groups {
            // reordered[(tap * ocg + o) * icg + c] = w[((group * ocg + o) * taps + tap) * icg + c]
            let group_w = &w.data[group * self.ocg * self.taps * k..][..self.ocg * self.taps * k];
            for (row, src) in group_w.chunks_exact(k.max(1)).enumerate() {
                let (o, tap) = (row / self.taps, row % self.taps);
                reordered[(tap * self.ocg + o) * k..][..k].copy_from_slice(src);
            }
            g.pack(
                BMat::Cols {
                    data: reordered,
                    ld: k,
                },
                0..g.panels(),
                packed,
            );
            for t0 in (0..self.pixels).step_by(g.m) {
                let rows = t0..(t0 + g.m).min(self.pixels);
                let a = AMat {
                    data: &x.data[t0 * ic + group * self.icg..],
                    ld: ic,
                };
                self.tile_gemm(a, rows.len(), packed, cols, par);
                let scatter = Scatter {
                    p,
                    x: x.dims,
                    y: y.dims,
                    rows,
                    group,
                    cols,
                };
                self.scatter(&scatter, y.data, par);
            }
        }
        if p.act != Activation::None {
            let workers = par::workers_for(y.data.len(), MIN_ADDS_PER_WORKER, self.scatter_workers);
            let (len, out) = (y.data.len(), Shared::new(y.data));
            par::ranges(par, workers, len, 1, &|mine, _| {
                // SAFETY: the ranges of the workers are disjoint.
                for v in unsafe { out.part(mine) } {
                    *v = p.act.apply(*v);
                }
            });
        }
        true
    }

    /// `cols[..rows] = A * B` for one tile of `rows` input pixels, split by rows over the workers.
    fn tile_gemm(
        &self,
        a: AMat<'_>,
        rows: usize,
        packed: &[f32],
        cols: &mut [f32],
        par: Option<&dyn Parallel>,
    ) {
        let g = &self.gemm;
        let n = g.n;
        let ep = Epilogue::act(Activation::None);
        let (len, cols) = (cols.len(), Shared::new(cols));
        par::ranges(par, self.workers, rows, g.mr(), &|mine, _| {
            // SAFETY: each worker writes only its own rows of `cols`.
            let mut c = unsafe { COut::shared(cols.as_ptr(), len, g.m, n, n) };
            g.run(
                a.rows_from(mine.start),
                packed,
                &mut c,
                &ep,
                mine,
                0..g.panels(),
            );
        });
    }

    /// Adds each tap's values of the tile's input pixels to the output pixel it lands on, split over
    /// the workers by output rows.
    fn scatter(&self, op: &Scatter<'_>, out: &mut [f32], par: Option<&dyn Parallel>) {
        let y = op.y;
        let row_len = y[2] * y[3];
        let out_rows = y[0] * y[1];
        let out = Shared::new(out);
        par::ranges(par, self.scatter_workers, out_rows, 1, &|mine, _| {
            // SAFETY: the workers' ranges of output rows are disjoint.
            let part = unsafe { out.part(mine.start * row_len..mine.end * row_len) };
            self.scatter_rows(op, mine, part);
        });
    }

    /// The scatter of [`Plan::scatter`] into the output rows `mine` (image rows of every batch,
    /// `b * OH + oy`) only, whose values are `out`.
    fn scatter_rows(&self, op: &Scatter<'_>, mine: Range<usize>, out: &mut [f32]) {
        let Scatter {
            p,
            x,
            y,
            ref rows,
            group,
            cols,
        } = *op;
        let (h, w) = (x[1], x[2]);
        let (oh, ow, oc) = (y[1], y[2], y[3]);
        let (sh, sw) = (usize::from(p.stride_h), usize::from(p.stride_w));
        let (dh, dw) = (usize::from(p.dilation_h), usize::from(p.dilation_w));
        let (pt, pl) = (usize::from(p.pad_top), usize::from(p.pad_left));
        let (n, ocg) = (self.gemm.n, self.ocg);
        // Input row by input row (a run of pixels of one image row), tap by tap: the tap's output row
        // is fixed, and its output pixels are `sw` apart.
        let mut i = rows.start;
        while i < rows.end {
            let (b, pixel) = (i / (h * w), i % (h * w));
            let (iy, ix0) = (pixel / w, pixel % w);
            let run = (w - ix0).min(rows.end - i);
            let src_rows = &cols[(i - rows.start) * n..][..run * n];
            for tap in 0..self.taps {
                let (ky, kx) = (tap / self.kw, tap % self.kw);
                let Some(oy) = (iy * sh + ky * dh).checked_sub(pt).filter(|&o| o < oh) else {
                    continue;
                };
                let Some(row) = (b * oh + oy)
                    .checked_sub(mine.start)
                    .filter(|_| b * oh + oy < mine.end)
                else {
                    continue;
                };
                let out_row = &mut out[row * ow * oc..][..ow * oc];
                // The pixels of the run whose output column `(ix0 + dx) * sw + kx * dw - pl` is in
                // 0..ow; their output and `cols` positions then step by `sw * oc` and `n`.
                let shift = kx * dw;
                let first = pl.saturating_sub(shift).div_ceil(sw).saturating_sub(ix0);
                let end = (ow + pl)
                    .saturating_sub(shift)
                    .div_ceil(sw)
                    .saturating_sub(ix0);
                for dx in first..end.min(run) {
                    let ox = (ix0 + dx) * sw + shift - pl;
                    let dst = &mut out_row[ox * oc + group * ocg..][..ocg];
                    let src = &src_rows[dx * n + tap * ocg..][..ocg];
                    for (d, &s) in dst.iter_mut().zip(src) {
                        *d += s;
                    }
                }
            }
            i += run;
        }
    }
}

/// Fills `y` with copies of `pattern` (`y.len()` a multiple of its length): the first copy, then the
/// filled part copied after itself, doubling (a handful of large copies, not one per pixel).
fn fill_repeat(y: &mut [f32], pattern: &[f32]) {
    let Some(first) = y.get_mut(..pattern.len()) else {
        return;
    };
    first.copy_from_slice(pattern);
    let mut filled = pattern.len();
    while filled < y.len() {
        let n = filled.min(y.len() - filled);
        y.copy_within(..n, filled);
        filled += n;
    }
}
