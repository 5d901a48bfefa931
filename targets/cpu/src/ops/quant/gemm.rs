//! The GEMM driver shared by convolutions and fully connected layers: `y[m, g * n + c] =
//! stage(sum_k row(m, g)[k] * w[g * n + c, k])` for every row `m`, group `g` and channel `c`.
//!
//! One call: the level packs each group's weights and the output stage is laid out (once, on the
//! calling thread, in the shared part of the scratch); then the rows are split over the workers in
//! whole units (output rows of pixels), each worker taking tiles of [`Level::MR`] rows from a
//! [`RowSource`] (the input itself, or im2col rows gathered into its own part of the scratch) and
//! computing each tile against every channel of each group.

use ember_core::Workspace;

use super::scratch::{bytes_for, take};
use super::split::{self, Parts};
use super::stage::{self, StageParams};
use super::{Level, Tile, MAX_MR};

/// Where a GEMM's rows come from.
pub(crate) trait RowSource: Sync {
    /// Row `m` of group `g` (`k` int8 inputs, raw): a slice of the input, or gathered into `buf`
    /// (`k` bytes).
    fn row<'a>(&'a self, m: usize, g: usize, buf: &'a mut [i8]) -> &'a [i8];
}

/// The sizes of a GEMM.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Rows (output pixels, or fully connected rows).
    pub m: usize,
    /// Inputs per row.
    pub k: usize,
    /// Groups: each has its own rows and weights.
    pub groups: usize,
    /// Output channels per group.
    pub n: usize,
    /// Rows per unit of work split over workers (an output row of pixels).
    pub unit: usize,
}

impl Shape {
    fn units(&self) -> usize {
        self.m.div_ceil(self.unit.max(1))
    }

    fn work(&self) -> usize {
        self.m
            .saturating_mul(self.k.max(1))
            .saturating_mul(self.n)
            .saturating_mul(self.groups)
    }
}

/// Element counts of the scratch regions of a GEMM at level `L`.
struct Layout {
    /// `i32`: the stage's three arrays.
    stage: usize,
    /// `i16`: the packed weights of every group.
    packed: usize,
    /// `i8` per worker: a tile of gathered rows.
    rows: usize,
    /// `i16` per worker: the level's temporaries.
    tmp: usize,
}

impl Layout {
    fn new<L: Level>(s: &Shape) -> Layout {
        let padded = s.n.next_multiple_of(L::NR);
        Layout {
            stage: 3 * s.groups * padded,
            packed: s.groups * L::gemm_packed_len(s.n, s.k),
            rows: L::MR * s.k.max(1),
            tmp: L::gemm_tile_len(s.k),
        }
    }

    fn shared_bytes(&self) -> usize {
        bytes_for::<i32>(self.stage) + bytes_for::<i16>(self.packed)
    }

    fn worker_bytes(&self) -> usize {
        bytes_for::<i8>(self.rows) + bytes_for::<i16>(self.tmp)
    }
}

/// Scratch bytes for a GEMM of shape `s` at level `L` on `workers` workers.
pub(crate) fn scratch<L: Level>(s: &Shape, workers: usize) -> usize {
    let layout = Layout::new::<L>(s);
    let parts = split::parts(workers, s.units(), s.work());
    layout.shared_bytes() + parts * layout.worker_bytes()
}

/// The layer's tensors and parameters, as the GEMM sees them.
pub(crate) struct Operands<'a, S> {
    /// The rows.
    pub rows: &'a S,
    /// Zero point of the inputs.
    pub x_zero_point: i8,
    /// Weights, `groups * n` rows of `k`.
    pub w: &'a [i8],
    /// Bias per output channel.
    pub b: Option<&'a [i32]>,
    /// `[OC, 2]` or `[1, 2]` requantization rows.
    pub requant: &'a [i32],
    /// The rest of the output stage.
    pub params: StageParams,
}

/// Computes the GEMM into `y` (`m` rows of `groups * n`). Returns `false`, having written nothing,
/// when the workspace is missing or its scratch too short (the caller then runs the reference).
pub(crate) fn run<L: Level, S: RowSource>(
    s: &Shape,
    op: &Operands<'_, S>,
    y: &mut [i8],
    ws: Option<&mut Workspace<'_>>,
) -> bool {
    let Some(ws) = ws else { return false };
    let layout = Layout::new::<L>(s);
    let room = ws.scratch.len().saturating_sub(layout.shared_bytes());
    let parts = split::parts(ws.workers(), s.units(), s.work()).min(room / layout.worker_bytes());
    if parts == 0 {
        return false;
    }
    let parallel = ws.parallel;
    let mut rest: &mut [u8] = ws.scratch;
    let (Some(arrays), Some(packed)) = (
        take::<i32>(&mut rest, layout.stage),
        take::<i16>(&mut rest, layout.packed),
    ) else {
        return false;
    };

    // The shared part: output stage and packed weights.
    let (k, n, padded) = (s.k, s.n, s.n.next_multiple_of(L::NR));
    let simd = stage::fill(arrays, s.groups, n, padded, op.b, op.requant);
    let group_w = |g: usize| op.w.get(g * n * k..(g + 1) * n * k).unwrap_or(&[]);
    let mut pair_safe = true;
    if L::FOLD_X_ZERO_POINT {
        let zp = i32::from(op.x_zero_point);
        let mut sums = [0i32; 64];
        for g in 0..s.groups {
            for c0 in (0..n).step_by(sums.len()) {
                let len = sums.len().min(n - c0);
                let rows = group_w(g).get(c0 * k..).unwrap_or(&[]);
                pair_safe &= !L::row_sums(rows, k, &mut sums[..len]);
                let bias = arrays.get_mut(g * padded + c0..).unwrap_or(&mut []);
                for (b, &sum) in bias.iter_mut().zip(&sums[..len]) {
                    *b = b.wrapping_sub(zp.wrapping_mul(sum));
                }
            }
        }
    }
    let plen = L::gemm_packed_len(n, k);
    for g in 0..s.groups {
        if let Some(dst) = packed.get_mut(g * plen..(g + 1) * plen) {
            L::gemm_pack(group_w(g), n, k, dst);
        }
    }
    let stage = stage::view(arrays, op.params, simd);
    let packed: &[i16] = packed;

    // The rows, split over the workers.
    let stride = s.groups * n;
    let out = Parts::new(y);
    let worker_bytes = layout.worker_bytes();
    let scratch = Parts::new(rest);
    let job = |i: usize| {
        let units = split::range(s.units(), parts, i);
        let (first, end) = (units.start * s.unit, (units.end * s.unit).min(s.m));
        // SAFETY: part `i` of the scratch and rows `first..end` of the output belong to this job
        // alone: the jobs' indices differ, and so do their unit ranges.
        let (mut mine, out) = unsafe {
            (
                scratch.part(i * worker_bytes..(i + 1) * worker_bytes),
                out.part(first * stride..end * stride),
            )
        };
        let (Some(buf), Some(tmp)) = (
            take::<i8>(&mut mine, layout.rows),
            take::<i16>(&mut mine, layout.tmp),
        ) else {
            return;
        };
        for t0 in (first..end).step_by(L::MR) {
            let mr = L::MR.min(end - t0);
            for g in 0..s.groups {
                let mut rows: [&[i8]; MAX_MR] = [&[]; MAX_MR];
                for ((r, row), chunk) in rows[..mr]
                    .iter_mut()
                    .enumerate()
                    .zip(buf.chunks_exact_mut(k.max(1)))
                {
                    *row = op.rows.row(t0 + r, g, &mut chunk[..k]);
                }
                let Some(out) = out.get_mut((t0 - first) * stride + g * n..) else {
                    return;
                };
                L::gemm(Tile {
                    rows: &rows[..mr],
                    k,
                    x_zero_point: op.x_zero_point,
                    w: group_w(g),
                    packed: packed.get(g * plen..(g + 1) * plen).unwrap_or(&[]),
                    n,
                    pair_safe,
                    stage: stage.skip(g * padded),
                    out,
                    out_stride: stride,
                    tmp,
                });
            }
        }
    };
    split::run(parallel, parts, &job);
    true
}
