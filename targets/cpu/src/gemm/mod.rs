//! f32 GEMM in the GotoBLAS/BLIS scheme: `C[m, n] = clip(init[m, n] + sum_k A[m, k] * B[k, n] + bias[n])`,
//! where `init` is zero or a residual `R[m, n]` (for a later fused Add).
//!
//! `B` is packed once per call into panels as wide as the level's register tile ([`pack`]); `A` is read
//! in place, row by row (its rows are NHWC pixels, im2col rows or matrix rows, all contiguous along `k`),
//! which needs no copy and keeps any tile height possible. The loops, outermost first: `k` in blocks of
//! `kc` (a block's panel part stays in L1 while row tiles go by), rows in blocks of `mc` (the `A` block
//! stays in L2), panels, row tiles; the register tile ([`tile`]) is the innermost kernel. Edge tiles: the
//! rows past `m` reuse the last row and are not stored; a panel past `n` is packed with zero columns and
//! its tile goes through a buffer on the stack, so nothing is read or written out of bounds.
//!
//! With `B` given by columns (layer weights), two shapes skip packing: one row of `A` is a GEMV
//! ([`tile::gemv`]), and a few rows with long enough `k` are blocks of dot products ([`dots`]), each
//! weight row read once.
//!
//! A [`Gemm`] is the plan for one shape on one level (path, tile choice, packed size);
//! [`Gemm::gemm`] packs and runs it, split over workers by rows or panels (each output is computed by
//! the same operations however the work is split, so the result does not depend on the number of
//! workers); the convolutions drive [`Gemm::pack`] and [`Gemm::run`] themselves.

pub(crate) mod dots;
pub(crate) mod lanes;
pub(crate) mod pack;
#[cfg(all(test, feature = "std"))]
pub(crate) mod tests;
pub(crate) mod tile;

use core::marker::PhantomData;
use core::ops::Range;

use ember_core::ops::math::activation::Activation;
use ember_core::Parallel;

use crate::gemm::lanes::clip_bounds;
use crate::level::{Level, TileKernel};
use crate::par::{self, Shared};
use dots::DotsArgs;
pub(crate) use pack::BMat;
use pack::Panel;
use tile::{GemvArgs, TileArgs};

/// At least the largest `MR * NR` of any level's tiles (AVX-512's 12x32): the edge buffers on the stack.
pub(crate) const MAX_TILE: usize = 12 * 32;

/// Multiply-adds below which a worker is not worth waking: a `ThreadPool::run` costs a few
/// microseconds, and 512k multiply-adds take about 10 on one Zen 3 core.
pub(crate) const MIN_WORK_PER_WORKER: usize = 1 << 19;

/// The left operand: `A[i, kk] = data[i * ld + kk]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AMat<'a> {
    /// The elements.
    pub data: &'a [f32],
    /// Row stride.
    pub ld: usize,
}

impl<'a> AMat<'a> {
    /// The rows from row `i` on (`i` at most the number of rows).
    pub(crate) fn rows_from(self, i: usize) -> AMat<'a> {
        AMat {
            data: self.data.get(i * self.ld..).unwrap_or_default(),
            ld: self.ld,
        }
    }

    /// Whether every element of an `m x k` matrix is inside `data`.
    pub(crate) fn fits(&self, m: usize, k: usize) -> bool {
        m == 0
            || k == 0
            || (k <= self.ld || m == 1)
                && (m - 1)
                    .checked_mul(self.ld)
                    .and_then(|s| s.checked_add(k))
                    .is_some_and(|end| end <= self.data.len())
    }
}

/// What is added and applied on the way out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Epilogue<'a> {
    /// `bias[j]` added to column `j` (at least `n` values).
    pub bias: Option<&'a [f32]>,
    /// `R[i, j]` added to `C[i, j]` (an `m x n` matrix, same layout rules as `A`).
    pub residual: Option<AMat<'a>>,
    /// The activation applied last.
    pub act: Activation,
}

impl Epilogue<'_> {
    /// Only an activation.
    pub(crate) fn act(act: Activation) -> Self {
        Epilogue {
            bias: None,
            residual: None,
            act,
        }
    }
}

/// The output `C[i, j] = ptr[i * ld + j]`, `m x n`, written tile by tile (by raw pointer, so that
/// workers can write disjoint tiles of one matrix).
pub(crate) struct COut<'a> {
    ptr: *mut f32,
    ld: usize,
    m: usize,
    n: usize,
    _borrow: PhantomData<&'a mut [f32]>,
}

impl<'a> COut<'a> {
    /// `C` over `data`, which it borrows whole (panics if an `m x n` matrix with row stride `ld` does
    /// not fit).
    pub(crate) fn new(data: &'a mut [f32], m: usize, n: usize, ld: usize) -> Self {
        let len = data.len();
        // SAFETY: `data` is borrowed exclusively for 'a, and `shared` checks the bounds.
        unsafe { COut::shared(data.as_mut_ptr(), len, m, n, ld) }
    }

    /// `C` over the `len` values at `ptr` (panics if an `m x n` matrix with row stride `ld` does not
    /// fit).
    ///
    /// # Safety
    ///
    /// `ptr` is valid for `len` reads and writes during 'a, and the elements that [`Gemm::run`] writes
    /// through this `COut` (its rows and panels) are accessed through nothing else meanwhile.
    pub(crate) unsafe fn shared(ptr: *mut f32, len: usize, m: usize, n: usize, ld: usize) -> Self {
        assert!(
            m == 0
                || n == 0
                || n <= ld
                    && (m - 1)
                        .checked_mul(ld)
                        .and_then(|s| s.checked_add(n))
                        .is_some_and(|end| end <= len)
        );
        COut {
            ptr,
            ld,
            m,
            n,
            _borrow: PhantomData,
        }
    }

    /// Pointer to `C[i, j]`.
    ///
    /// # Safety
    ///
    /// `i < m` and `j <= n`.
    unsafe fn at(&self, i: usize, j: usize) -> *mut f32 {
        // SAFETY: inside the bounds `shared` checked (caller).
        unsafe { self.ptr.add(i * self.ld + j) }
    }
}

/// How a GEMM is computed (see [`Gemm::path`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// One row against `B`'s columns.
    Gemv,
    /// Blocks of dot products, a few rows against `B`'s columns.
    Dots,
    /// `B` packed into panels, register tiles.
    Packed,
}

/// Buffers on the stack for the tiles of a panel that sticks out past `n`: the tile's output (and start
/// values) and its bias, `MR x NR` and `NR` values.
struct Edge {
    c: [f32; MAX_TILE],
    bias: [f32; MAX_TILE],
}

/// The plan of one GEMM shape on one level.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gemm {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// The shared dimension.
    pub k: usize,
    level: &'static Level,
    main: &'static TileKernel,
    last: &'static TileKernel,
    /// Panels in all (the last one `last.nr` wide, the others `main.nr`).
    panels: usize,
    /// Most rows computed as dot products (the level's, changed by tests).
    dots_max_m: usize,
    /// Fewest terms of a dot product for computing them so (the level's).
    dots_min_k: usize,
    kc: usize,
    mc: usize,
}

impl Gemm {
    /// The plan for `m x n x k` on `level`: the register tile that wastes the least work on edges, and for
    /// the last panel the narrowest tile that covers the remaining columns.
    pub(crate) fn new(level: &'static Level, m: usize, n: usize, k: usize) -> Gemm {
        let lanes = level.lanes;
        let rem_of = |nr: usize| match n % nr {
            0 => nr,
            r => r,
        };
        let last_for = |nr: usize| {
            let rem = rem_of(nr).div_ceil(lanes) * lanes;
            level
                .tiles
                .iter()
                .find(|t| t.nr >= rem)
                .unwrap_or(&level.tiles[0])
        };
        // Cycles per tile row and k, in units of the main tile's: padded work divided by the tile's
        // measured speed.
        let cost = |t: &TileKernel| {
            let full = n.saturating_sub(1) / t.nr;
            let last = last_for(t.nr);
            let tile_cost = |t: &TileKernel| m.div_ceil(t.mr) * t.mr * t.nr * 1000 / t.speed;
            full * tile_cost(t) + tile_cost(last)
        };
        // The widest of the cheapest (tiles are listed narrowest first).
        let main = level
            .tiles
            .iter()
            .rev()
            .min_by_key(|t| cost(t))
            .unwrap_or(&level.tiles[0]);
        Gemm {
            m,
            n,
            k,
            level,
            main,
            last: last_for(main.nr),
            panels: n.div_ceil(main.nr).max(1),
            dots_max_m: level.dots_max_m,
            dots_min_k: level.dots_min_k,
            kc: level.kc,
            mc: level.mc,
        }
    }

    /// Rows and columns of the tile most of `C` is computed with.
    #[cfg(test)]
    pub(crate) fn tile(&self) -> (usize, usize) {
        let t = if self.panels == 1 {
            self.last
        } else {
            self.main
        };
        (t.mr, t.nr)
    }

    /// Number of panels of `B`.
    pub(crate) fn panels(&self) -> usize {
        self.panels
    }

    /// Rows of the main tile.
    pub(crate) fn mr(&self) -> usize {
        self.main.mr
    }

    /// f32 values of packed `B`.
    pub(crate) fn packed_len(&self) -> usize {
        self.panel_offset(self.panels)
    }

    /// Where panel `p` starts in packed `B` (`p <= panels`).
    fn panel_offset(&self, p: usize) -> usize {
        let full = p.min(self.panels - 1);
        let last = if p == self.panels { self.last.nr } else { 0 };
        (full * self.main.nr + last) * self.k
    }

    /// Tile, first column, width and valid columns of panel `p`.
    fn panel(&self, p: usize) -> (&'static TileKernel, usize, usize) {
        let j0 = p * self.main.nr;
        let tile = if p + 1 == self.panels {
            self.last
        } else {
            self.main
        };
        (tile, j0, tile.nr.min(self.n - j0))
    }

    /// How [`Gemm::gemm`] computes this shape with `B` laid out as `b` says: with `B` by columns (weights),
    /// one row is a GEMV and a few rows are blocks of dot products, neither of which packs `B`.
    fn path(&self, b: &BMat<'_>) -> Path {
        match b {
            BMat::Cols { .. } if self.m == 1 => Path::Gemv,
            BMat::Cols { .. } if self.m <= self.dots_max_m && self.k >= self.dots_min_k => {
                Path::Dots
            }
            _ => Path::Packed,
        }
    }

    /// Scratch f32 values that [`Gemm::gemm`] needs for `B` laid out as `b` says.
    pub(crate) fn scratch_len(&self, b: &BMat<'_>) -> usize {
        match self.path(b) {
            Path::Packed if self.m > 0 && self.n > 0 => self.packed_len(),
            _ => 0,
        }
    }

    /// `C = ep(A * B)` (`C[i, j] = c[i * ldc + j]`), split over at most `workers` workers of `par`, with
    /// `B` packed into `scratch`. Returns `false`, with `C` untouched, when `scratch` is shorter than
    /// [`Gemm::scratch_len`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gemm(
        &self,
        a: AMat<'_>,
        b: BMat<'_>,
        ep: &Epilogue<'_>,
        c: &mut [f32],
        ldc: usize,
        scratch: &mut [f32],
        par: Option<&dyn Parallel>,
        workers: usize,
    ) -> bool {
        let (m, n, k) = (self.m, self.n, self.k);
        if m == 0 || n == 0 {
            return true;
        }
        let workers = par::workers_for(m * n * k.max(1), MIN_WORK_PER_WORKER, workers);
        match (self.path(&b), b) {
            (Path::Gemv, BMat::Cols { data, ld }) => {
                self.gemv(a, data, ld, ep, c, par, workers);
                return true;
            }
            (Path::Dots, BMat::Cols { data, ld }) => {
                self.dots(a, data, ld, ep, c, ldc, par, workers);
                return true;
            }
            _ => {}
        }
        let Some(packed) = scratch.get_mut(..self.packed_len()) else {
            return false;
        };
        let all = 0..self.panels;
        let row_tiles = m.div_ceil(self.main.mr);
        if workers == 1 {
            self.pack(b, all.clone(), packed);
            self.run(a, packed, &mut COut::new(c, m, n, ldc), ep, 0..m, all);
        } else if row_tiles >= 4 * workers || self.panels < workers {
            // Split rows: B is packed once, by all the workers, then read by every worker.
            self.pack_all(b, packed, par, workers);
            let packed = &*packed;
            let (c_len, c) = (c.len(), Shared::new(c));
            par::ranges(par, workers, m, self.main.mr, &|rows, _| {
                // SAFETY: `c` is borrowed whole for this call; each worker writes only its own rows.
                let mut c = unsafe { COut::shared(c.as_ptr(), c_len, m, n, ldc) };
                self.run(
                    a.rows_from(rows.start),
                    packed,
                    &mut c,
                    ep,
                    rows,
                    all.clone(),
                );
            });
        } else {
            // Split panels: each worker packs its own and computes every row of them.
            let (c_len, c) = (c.len(), Shared::new(c));
            let packed = Shared::new(packed);
            par::ranges(par, workers, self.panels, 1, &|panels, _| {
                let span = self.panel_offset(panels.start)..self.panel_offset(panels.end);
                // SAFETY: the panel ranges are disjoint, and so are their packed parts.
                let part = unsafe { packed.part(span) };
                self.pack(b, panels.clone(), part);
                // SAFETY: `c` is borrowed whole for this call; each worker writes only the columns of
                // its own panels.
                let mut c = unsafe { COut::shared(c.as_ptr(), c_len, m, n, ldc) };
                self.run(a, part, &mut c, ep, 0..m, panels);
            });
        }
        true
    }

    /// The one-row case of [`Gemm::gemm`]: `W[j, kk] = w[j * ldw + kk]`, outputs split over workers in
    /// groups of four.
    #[allow(clippy::too_many_arguments)]
    fn gemv(
        &self,
        a: AMat<'_>,
        w: &[f32],
        ldw: usize,
        ep: &Epilogue<'_>,
        c: &mut [f32],
        par: Option<&dyn Parallel>,
        workers: usize,
    ) {
        let (n, k) = (self.n, self.k);
        assert!(a.fits(1, k) && BMat::Cols { data: w, ld: ldw }.fits(k, n) && c.len() >= n);
        assert!(ep.bias.is_none_or(|b| b.len() >= n));
        assert!(ep.residual.is_none_or(|r| r.fits(1, n)));
        let (lo, hi) = clip_bounds(ep.act);
        let c = Shared::new(c);
        let gemv = self.level.gemv;
        par::ranges(par, workers, n, 4, &|js, _| {
            // SAFETY: the output ranges are disjoint.
            let y = unsafe { c.part(js.clone()) };
            let args = GemvArgs {
                k,
                x: a.data.as_ptr(),
                w: match k {
                    0 => w.as_ptr(),
                    _ => w[js.start * ldw..].as_ptr(),
                },
                ldw,
                n: js.len(),
                bias: ep
                    .bias
                    .map_or(core::ptr::null(), |b| b[js.start..].as_ptr()),
                init: ep
                    .residual
                    .map_or(core::ptr::null(), |r| r.data[js.start..].as_ptr()),
                y: y.as_mut_ptr(),
                lo,
                hi,
            };
            // SAFETY: `x` has k values, rows js of W have k values each (`fits`), bias and residual n,
            // `y` js.len(); the level runs on this CPU (checked when the op started).
            unsafe { gemv(&args) };
        });
    }

    /// The dot-product case of [`Gemm::gemm`]: blocks of dot products of `A`'s rows with `W`'s
    /// (`W[j, kk] = w[j * ldw + kk]`), the rows of `W` split over the workers. Rows of `A` go in blocks
    /// of `mc` (kept in L2 while every block of `W` goes by).
    #[allow(clippy::too_many_arguments)]
    fn dots(
        &self,
        a: AMat<'_>,
        w: &[f32],
        ldw: usize,
        ep: &Epilogue<'_>,
        c: &mut [f32],
        ldc: usize,
        par: Option<&dyn Parallel>,
        workers: usize,
    ) {
        let (m, n, k) = (self.m, self.n, self.k);
        assert!(a.fits(m, k) && BMat::Cols { data: w, ld: ldw }.fits(k, n));
        assert!(ep.bias.is_none_or(|b| b.len() >= n));
        assert!(ep.residual.is_none_or(|r| r.fits(m, n)));
        let (lo, hi) = clip_bounds(ep.act);
        let (mr, nw) = (self.level.dots_rows, self.level.dots_cols);
        let kernel = self.level.dots;
        let (c_len, c) = (c.len(), Shared::new(c));
        par::ranges(par, workers, n, nw, &|mine, _| {
            // SAFETY: `c` is borrowed whole for this call; each range of columns is written by one call.
            let c = unsafe { COut::shared(c.as_ptr(), c_len, m, n, ldc) };
            for ib in (0..m).step_by(self.mc) {
                for j in mine.clone().step_by(nw) {
                    let cols = nw.min(n - j);
                    for i in (ib..(ib + self.mc).min(m)).step_by(mr) {
                        let rows = mr.min(m - i);
                        let args = DotsArgs {
                            k,
                            a: match k {
                                0 => a.data.as_ptr(),
                                _ => a.data[i * a.ld..].as_ptr(),
                            },
                            lda: a.ld,
                            rows,
                            w: match k {
                                0 => w.as_ptr(),
                                _ => w[j * ldw..].as_ptr(),
                            },
                            ldw,
                            cols,
                            // SAFETY: i < m, j < n.
                            c: unsafe { c.at(i, j) },
                            ldc,
                            init: ep
                                .residual
                                .map_or(core::ptr::null(), |r| r.data[i * r.ld + j..].as_ptr()),
                            ld_init: ep.residual.map_or(0, |r| r.ld),
                            bias: ep.bias.map_or(core::ptr::null(), |b| b[j..].as_ptr()),
                            lo,
                            hi,
                        };
                        // SAFETY: rows i..i + rows of A and j..j + cols of W have k values each (`fits`),
                        // and C, the residual and the bias the block's elements; the level runs on this CPU
                        // (checked when the op started).
                        unsafe { kernel(&args) };
                    }
                }
            }
        });
    }

    /// Packs every panel of `b` into `out` (as [`Gemm::pack`]), the panels split over `workers`: a
    /// layer's weights are packed on every call, and with few rows (late layers, batch 1) packing is a
    /// large part of the call.
    pub(crate) fn pack_all(
        &self,
        b: BMat<'_>,
        out: &mut [f32],
        par: Option<&dyn Parallel>,
        workers: usize,
    ) {
        let workers = workers.min(self.panels).max(1);
        if workers == 1 || par.is_none() {
            self.pack(b, 0..self.panels, out);
            return;
        }
        let out = Shared::new(out);
        par::ranges(par, workers, self.panels, 1, &|panels, _| {
            let span = self.panel_offset(panels.start)..self.panel_offset(panels.end);
            // SAFETY: the workers' panel ranges are disjoint, and so are their packed parts.
            let part = unsafe { out.part(span) };
            self.pack(b, panels, part);
        });
    }

    /// Packs panels `panels` of `b` into `out`, which holds exactly those panels (it starts where the
    /// first of them starts in the whole packed `B`).
    pub(crate) fn pack(&self, b: BMat<'_>, panels: Range<usize>, out: &mut [f32]) {
        assert!(b.fits(self.k, self.n));
        let base = self.panel_offset(panels.start);
        for p in panels {
            let (tile, j0, valid) = self.panel(p);
            let start = self.panel_offset(p) - base;
            let panel = Panel {
                b,
                k: self.k,
                j0,
                valid,
                width: tile.nr,
            };
            // SAFETY: the level runs here (checked when the op started); `b` fits k x n (asserted
            // above) and valid <= nr.
            unsafe { (self.level.pack)(panel, &mut out[start..]) };
        }
    }

    /// Computes rows `rows` of `C` in panels `panels` from `a`, which holds those rows of `A` (its row 0
    /// is `A`'s row `rows.start`), and those panels of packed `B` (`packed` starts where the first of
    /// them starts, as [`Gemm::pack`] wrote it).
    pub(crate) fn run(
        &self,
        a: AMat<'_>,
        packed: &[f32],
        c: &mut COut<'_>,
        ep: &Epilogue<'_>,
        rows: Range<usize>,
        panels: Range<usize>,
    ) {
        let (m, n, k) = (self.m, self.n, self.k);
        if m == 0 || n == 0 {
            return;
        }
        assert!(a.fits(rows.len(), k));
        assert!(packed.len() >= self.panel_offset(panels.end) - self.panel_offset(panels.start));
        assert!(c.m == m && c.n == n && rows.end <= m && panels.end <= self.panels);
        assert!(ep.bias.is_none_or(|b| b.len() >= n));
        assert!(ep.residual.is_none_or(|r| r.fits(m, n)));
        let (lo, hi) = clip_bounds(ep.act);
        let base = self.panel_offset(panels.start);
        // The edge tiles' buffers, zeroed once (later tiles find the previous one's values in them,
        // which only reach discarded columns).
        let mut edge = Edge {
            c: [0.0; MAX_TILE],
            bias: [0.0; MAX_TILE],
        };
        let mut pc = 0;
        loop {
            let kc = self.kc.min(k - pc);
            let first = pc == 0;
            let last = pc + kc == k;
            // Row i of the k block (nothing is read when k is 0).
            let a_ptr = |i: usize| match kc {
                0 => a.data.as_ptr(),
                _ => a.data[(i - rows.start) * a.ld + pc..].as_ptr(),
            };
            for ic in rows.clone().step_by(self.mc) {
                let block = ic..(ic + self.mc).min(rows.end);
                for p in panels.clone() {
                    let (tile, j0, valid) = self.panel(p);
                    let b = &packed[self.panel_offset(p) - base + pc * tile.nr..][..kc * tile.nr];
                    for i in block.clone().step_by(tile.mr) {
                        let tile_rows = tile.mr.min(block.end - i);
                        let args = TileArgs {
                            k: kc,
                            a: a_ptr(i),
                            lda: a.ld,
                            rows: tile_rows,
                            b: b.as_ptr(),
                            c: core::ptr::null_mut(),
                            ldc: c.ld,
                            init: core::ptr::null(),
                            ld_init: 0,
                            last,
                            bias: core::ptr::null(),
                            lo,
                            hi,
                        };
                        self.call_tile(tile, args, c, ep, &mut edge, first, i, j0, valid);
                    }
                }
            }
            pc += kc;
            if pc >= k {
                break;
            }
        }
    }

    /// Runs one tile at rows `i..`, columns `j0..j0 + valid`: straight on `C` when the panel is whole,
    /// through a buffer on the stack when it sticks out past `n`.
    #[allow(clippy::too_many_arguments)]
    fn call_tile(
        &self,
        tile: &TileKernel,
        mut args: TileArgs,
        c: &mut COut<'_>,
        ep: &Epilogue<'_>,
        edge: &mut Edge,
        first: bool,
        i: usize,
        j0: usize,
        valid: usize,
    ) {
        let rows = args.rows;
        let nr = tile.nr;
        // The start values: the residual on the first k block, C itself afterwards.
        let (init, ld_init) = match (first, ep.residual) {
            (true, None) => (core::ptr::null(), 0),
            (true, Some(r)) => (r.data[i * r.ld + j0..].as_ptr(), r.ld),
            // SAFETY: i < m, j0 < n.
            (false, _) => (unsafe { c.at(i, j0) }.cast_const(), c.ld),
        };
        let bias = match ep.bias {
            Some(b) if args.last => b[j0..].as_ptr(),
            _ => core::ptr::null(),
        };
        // SAFETY: i < m, j0 < n. The tile writes rows i..i + rows (<= m) and columns j0..j0 + nr, inside
        // C when the panel is whole (valid == nr), and accessed by nothing else (`COut`'s contract).
        let c_tile = unsafe { c.at(i, j0) };
        if valid == nr {
            args.c = c_tile;
            args.init = init;
            args.ld_init = ld_init;
            args.bias = bias;
            // SAFETY: `A` rows i..i + rows and the k block are in bounds (`a.fits`, checked by `run`), the
            // panel part has kc * nr values, C, `init` and `bias` have the tile's rows x nr elements in
            // bounds (whole panel); the level runs on this CPU (checked when the op started).
            unsafe { (tile.run)(&args) };
            return;
        }
        // Edge panel: copy the valid part of `init` and `bias` into zero-padded buffers, run the tile
        // into a buffer, copy the valid columns out.
        let Edge {
            c: buf,
            bias: bias_buf,
        } = edge;
        if !init.is_null() {
            for r in 0..rows {
                // SAFETY: row r < rows of `init` has `valid` elements from its start (inside C or R).
                let src = unsafe { core::slice::from_raw_parts(init.add(r * ld_init), valid) };
                copy_short(&mut buf[r * nr..][..valid], src);
            }
            // Set below from the same pointer as `c`: a pointer from `as_ptr` here would be
            // invalidated by the later `as_mut_ptr` (Miri's Stacked Borrows).
            args.ld_init = nr;
        }
        if !bias.is_null() {
            // SAFETY: the bias has n >= j0 + valid values (checked by `run`).
            let src = unsafe { core::slice::from_raw_parts(bias, valid) };
            copy_short(&mut bias_buf[..valid], src);
            args.bias = bias_buf.as_ptr();
        }
        // One pointer for the tile's init (read) and C (written): the same buffer, read before written.
        let c_buf = buf.as_mut_ptr();
        if !init.is_null() {
            args.init = c_buf.cast_const();
        }
        args.c = c_buf;
        args.ldc = nr;
        // SAFETY: as above, with `init`, `bias` and C in the stack buffers (rows x nr <= MAX_TILE).
        unsafe { (tile.run)(&args) };
        for r in 0..rows {
            // SAFETY: row i + r < m of C has `valid` columns from j0 (< n), written by no one else.
            let dst = unsafe { core::slice::from_raw_parts_mut(c_tile.add(r * c.ld), valid) };
            copy_short(dst, &buf[r * nr..][..valid]);
        }
    }
}

/// `dst.copy_from_slice(src)` for the few values of an edge tile's row, in groups of four and then
/// one by one, without the call to `memcpy` a slice copy of unknown length becomes (which costs more
/// than the copy for a handful of values, once per row of a narrow output).
#[inline(always)]
fn copy_short(dst: &mut [f32], src: &[f32]) {
    let mut d = dst.chunks_exact_mut(4);
    let mut s = src.chunks_exact(4);
    for (d, s) in (&mut d).zip(&mut s) {
        let s: [f32; 4] = [s[0], s[1], s[2], s[3]];
        d.copy_from_slice(&s);
    }
    for (d, &s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d = s;
    }
}
