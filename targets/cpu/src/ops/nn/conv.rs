//! 2-D convolution over NHWC (the `conv2d` entry of the tables) as GEMMs: output pixels are the rows,
//! output channels the columns, and the OHWI weights of a group are `B` read by columns
//! (`B[k, oc] = w[oc * K + k]`, with `k` ordered `(ky, kx, ic)` as im2col rows are).
//!
//! - 1x1, stride 1, no padding: `A` is the input itself, `[N * H * W, IC]`.
//! - Any other kernel: im2col rows built in scratch, a tile of rows at a time, each worker with its own
//!   tile (so the scratch stays bounded), then the GEMM on the tile.
//! - groups == IC > 1: the depthwise kernel ([`super::depthwise`]).
//! - Few output channels, strides and dilations 1: vectors along the output row ([`super::narrow`]).
//! - Other groups: one GEMM per group, on the group's channels.
//!
//! Bias and activation are the GEMM's epilogue. Without a workspace, or with less scratch than
//! [`scratch_bytes`] asked for, the reference kernel runs.

use core::ops::Range;

use ember_core::ops::nn::conv::{self as reference, Conv2dParams};
use ember_core::ops::Out;
use ember_core::{Parallel, Workspace};

use super::depthwise::Depthwise;
use super::narrow::{self, Narrow};
use super::{run_or_fall_back, Tensors};
use crate::gemm::{AMat, BMat, COut, Epilogue, Gemm, MIN_WORK_PER_WORKER};
use crate::level::Level;
use crate::par::{self, Shared};
use crate::scratch::{bytes_for, line_stride, Carve};

/// im2col values per tile (128 KiB): a tile of `A` stays in L2 while the panels go by.
const IM2COL_FLOATS: usize = 32 * 1024;

/// Rows of a tile are a multiple of this (the heights of every level's tiles divide it).
const TILE_ROWS_UNIT: usize = 24;

/// How one convolution runs.
pub(crate) enum Plan {
    Depthwise(Depthwise),
    Narrow(Narrow),
    Gemm(GemmConv),
}

/// A convolution as one GEMM per group.
pub(crate) struct GemmConv {
    groups: usize,
    /// Input and output channels per group.
    icg: usize,
    ocg: usize,
    /// 1x1, stride 1, no padding: the input is `A`.
    pointwise: bool,
    /// The GEMM of one group: `m = N * OH * OW`, `n = ocg`, `k = KH * KW * icg`.
    gemm: Gemm,
    /// im2col rows per tile (when not pointwise).
    tile_rows: usize,
    /// Workers the im2col tiles are split over.
    workers: usize,
    /// Workers of the session (a pointwise GEMM splits itself).
    pool: usize,
}

impl Plan {
    /// The plan for these shapes (checked by `conv::validate`) on `workers` workers.
    pub(crate) fn new(
        level: &'static Level,
        p: &Conv2dParams,
        x: &[usize],
        w: &[usize],
        y: &[usize],
        workers: usize,
    ) -> Plan {
        let groups = usize::from(p.groups);
        let (ic, oc) = (x[3], w[0]);
        if groups > 1 && groups == ic {
            return Plan::Depthwise(Depthwise::new(x, w, y, workers));
        }
        if narrow::worth_it(p, w, y, level.lanes) {
            return Plan::Narrow(Narrow::new(x, w, y, level.lanes, workers));
        }
        let (icg, ocg) = (ic / groups, oc / groups);
        let (kh, kw) = (w[1], w[2]);
        let m = y[0] * y[1] * y[2];
        let k = kh * kw * icg;
        let pointwise = kh == 1
            && kw == 1
            && p.stride_h == 1
            && p.stride_w == 1
            && [p.pad_top, p.pad_left, p.pad_bottom, p.pad_right] == [0; 4];
        let tile_rows = (IM2COL_FLOATS / k.max(1) / TILE_ROWS_UNIT * TILE_ROWS_UNIT)
            .max(TILE_ROWS_UNIT)
            .min(m);
        let work = m * ocg * k.max(1);
        let pool = workers;
        let workers = par::workers_for(work, MIN_WORK_PER_WORKER, workers)
            .min(m.div_ceil(tile_rows.max(1)).max(1));
        Plan::Gemm(GemmConv {
            pool,
            groups,
            icg,
            ocg,
            pointwise,
            gemm: Gemm::new(level, m, ocg, k),
            tile_rows,
            workers,
        })
    }

    /// Scratch bytes the plan takes (what `conv2d` asks for on its level with its workers).
    pub(crate) fn scratch_bytes(&self) -> usize {
        match self {
            Plan::Depthwise(d) => bytes_for(&d.scratch_lens()),
            Plan::Narrow(n) => bytes_for(&n.scratch_lens()),
            Plan::Gemm(g) => bytes_for(&g.scratch_lens()),
        }
    }
}

/// `y = act(conv(x, w) + b)` with `level`'s kernels (see the module documentation).
pub(crate) fn conv2d(
    level: &'static Level,
    p: &Conv2dParams,
    t: Tensors<'_>,
    y: Out<'_>,
    ws: Option<&mut Workspace<'_>>,
) {
    let run = |workers, y: Out<'_>, scratch: &mut Carve<'_>, par: Option<&dyn Parallel>| {
        let plan = Plan::new(level, p, t.x.dims, t.w.dims, y.dims, workers);
        plan.run(level, p, t, y, scratch, par)
    };
    run_or_fall_back(level, y, ws, run, |y| {
        reference::conv2d(p, t.x, t.w, t.b, y)
    })
}

impl Plan {
    /// Runs the plan; `false` (nothing written) when the scratch is too short.
    fn run(
        &self,
        level: &'static Level,
        p: &Conv2dParams,
        t: Tensors<'_>,
        y: Out<'_>,
        scratch: &mut Carve<'_>,
        par: Option<&dyn Parallel>,
    ) -> bool {
        match self {
            Plan::Depthwise(d) => d.run(level.depthwise, p, t, y, scratch, par),
            Plan::Narrow(n) => n.run(level.narrow, p, t, y, scratch, par),
            Plan::Gemm(g) => g.run(p, t, y, scratch, par),
        }
    }
}

impl GemmConv {
    /// Lengths of the scratch buffers: packed weights (none for a pointwise GEMV), and unless pointwise
    /// one im2col tile per worker.
    fn scratch_lens(&self) -> [usize; 2] {
        if self.pointwise {
            let weights = BMat::Cols {
                data: &[],
                ld: self.gemm.k,
            };
            return [self.gemm.scratch_len(&weights), 0];
        }
        let tile = line_stride(self.tile_rows * self.gemm.k);
        [self.gemm.packed_len(), self.workers * tile]
    }

    /// Runs the convolution; `false` (nothing written) when the scratch is too short.
    fn run(
        &self,
        p: &Conv2dParams,
        Tensors { x, w, b }: Tensors<'_>,
        y: Out<'_>,
        scratch: &mut Carve<'_>,
        par: Option<&dyn Parallel>,
    ) -> bool {
        let gemm = &self.gemm;
        let (m, k) = (gemm.m, gemm.k);
        let (ic, oc) = (x.dims[3], w.dims[0]);
        let weights = |group: usize| BMat::Cols {
            data: &w.data[group * self.ocg * k..],
            ld: k,
        };
        let Some([packed, tiles]) = scratch.take_all(self.scratch_lens()) else {
            return false;
        };
        if self.pointwise {
            for group in 0..self.groups {
                let a = AMat {
                    data: &x.data[group * self.icg..],
                    ld: ic,
                };
                let ep = epilogue(p, b, group, self.ocg);
                let c = &mut y.data[group * self.ocg..];
                gemm.gemm(a, weights(group), &ep, c, oc, packed, par, self.pool);
            }
            return true;
        }
        let geometry = Geometry::new(p, x.dims, w.dims, y.dims);
        let tiles = Shared::new(tiles);
        let (y_len, y) = (y.data.len(), Shared::new(y.data));
        for group in 0..self.groups {
            gemm.pack_all(weights(group), packed, par, self.workers);
            let packed = &*packed;
            let ep = epilogue(p, b, group, self.ocg);
            let channels = group * self.icg..(group + 1) * self.icg;
            par::ranges(par, self.workers, m, self.tile_rows, &|rows, worker| {
                let start = worker * line_stride(self.tile_rows * k);
                // SAFETY: each worker takes its own tile buffer (its calls do not overlap).
                let tile = unsafe { tiles.part(start..start + self.tile_rows * k) };
                let first = group * self.ocg;
                // SAFETY: the group's output columns start at `first` (< y_len: m > 0 rows of oc); each
                // worker writes only its own rows.
                let mut c =
                    unsafe { COut::shared(y.as_ptr().add(first), y_len - first, m, self.ocg, oc) };
                for t0 in rows.clone().step_by(self.tile_rows) {
                    let t = t0..(t0 + self.tile_rows).min(rows.end);
                    let a = &mut tile[..t.len() * k];
                    geometry.im2col(x.data, channels.clone(), t.clone(), a);
                    let a = AMat { data: a, ld: k };
                    gemm.run(a, packed, &mut c, &ep, t, 0..gemm.panels());
                }
            });
        }
        true
    }
}

/// The bias of group `group` (`ocg` channels) and the activation, as a GEMM epilogue.
fn epilogue<'a>(p: &Conv2dParams, b: Option<&'a [f32]>, group: usize, ocg: usize) -> Epilogue<'a> {
    Epilogue {
        bias: b.map(|b| &b[group * ocg..][..ocg]),
        residual: None,
        act: p.act,
    }
}

/// Where each im2col value comes from.
#[derive(Clone, Copy)]
struct Geometry {
    /// Input height, width, channels.
    h: usize,
    w: usize,
    c: usize,
    /// Output height and width.
    oh: usize,
    ow: usize,
    /// Kernel height and width.
    kh: usize,
    kw: usize,
    stride: (usize, usize),
    dilation: (usize, usize),
    pad: (usize, usize),
}

impl Geometry {
    fn new(p: &Conv2dParams, x: &[usize], w: &[usize], y: &[usize]) -> Geometry {
        Geometry {
            h: x[1],
            w: x[2],
            c: x[3],
            oh: y[1],
            ow: y[2],
            kh: w[1],
            kw: w[2],
            stride: (p.stride_h.into(), p.stride_w.into()),
            dilation: (p.dilation_h.into(), p.dilation_w.into()),
            pad: (p.pad_top.into(), p.pad_left.into()),
        }
    }

    /// Writes the im2col rows `rows` (output pixels, batch included) of input channels `channels` into
    /// `out`: row `r` holds, for each tap `(ky, kx)`, the pixel's channels, or zeros in the padding.
    fn im2col(&self, x: &[f32], channels: Range<usize>, rows: Range<usize>, out: &mut [f32]) {
        let icg = channels.len();
        let k = self.kh * self.kw * icg;
        let per_image = self.oh * self.ow;
        // A whole kernel row is one contiguous run of the input when taps are adjacent pixels and a
        // group is all the channels.
        let contiguous = self.dilation.1 == 1 && icg == self.c;
        // The first row's image and output pixel by division, the next ones by counting (a division
        // per row cost a tenth of the im2col time of small layers).
        let per_image = per_image.max(1);
        let (mut n, pixel) = (rows.start / per_image, rows.start % per_image);
        let (mut oy, mut ox) = (pixel / self.ow.max(1), pixel % self.ow.max(1));
        for (row, _) in out.chunks_exact_mut(k.max(1)).zip(rows) {
            let image = &x[n * self.h * self.w * self.c..][..self.h * self.w * self.c];
            for (ky, dst) in row.chunks_exact_mut(self.kw * icg).enumerate() {
                let iy = (oy * self.stride.0 + ky * self.dilation.0).checked_sub(self.pad.0);
                let Some(iy) = iy.filter(|&iy| iy < self.h) else {
                    dst.fill(0.0);
                    continue;
                };
                let line = &image[iy * self.w * self.c..][..self.w * self.c];
                let x0 = ox * self.stride.1;
                let inside =
                    x0 >= self.pad.1 && x0 + (self.kw - 1) * self.dilation.1 < self.pad.1 + self.w;
                if contiguous && inside {
                    copy(dst, &line[(x0 - self.pad.1) * self.c..][..self.kw * self.c]);
                    continue;
                }
                for (kx, d) in dst.chunks_exact_mut(icg.max(1)).enumerate() {
                    match (x0 + kx * self.dilation.1).checked_sub(self.pad.1) {
                        Some(ix) if ix < self.w => {
                            copy(d, &line[ix * self.c + channels.start..][..icg])
                        }
                        _ => d.fill(0.0),
                    }
                }
            }
            ox += 1;
            if ox == self.ow {
                ox = 0;
                oy += 1;
                if oy == self.oh {
                    oy = 0;
                    n += 1;
                }
            }
        }
    }
}

/// Runs of im2col below this many floats are copied inline, four at a time: a `memcpy` call costs more
/// than the copy for a few channels (a 3x3 convolution of 4 channels copies 12 floats per kernel row).
const SHORT_COPY: usize = 32;

/// `dst.copy_from_slice(src)` (equal lengths), inline for short runs.
#[inline(always)]
fn copy(dst: &mut [f32], src: &[f32]) {
    if dst.len() >= SHORT_COPY {
        return dst.copy_from_slice(src);
    }
    let mut d = dst.chunks_exact_mut(4);
    let mut s = src.chunks_exact(4);
    for (d, s) in (&mut d).zip(&mut s) {
        let s: [f32; 4] = [s[0], s[1], s[2], s[3]];
        d.copy_from_slice(&s);
    }
    for (d, s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d = *s;
    }
}
