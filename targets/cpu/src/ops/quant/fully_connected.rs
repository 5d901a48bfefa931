//! int8 FullyConnected (`Kernels::quant_fully_connected`), bit-identical to
//! `ember_core::ops::quant::fully_connected::fully_connected`.
//!
//! Few rows (a single inference: `[1, IN]`) run the level's matrix-vector product over the weights as
//! given, output channels split over the workers: packing the weights would cost as much as using them
//! once. More rows run the GEMM ([`gemm`]) on the input rows directly, rows split over the workers.

use ember_core::ops::quant::fully_connected::{self as reference, QuantFullyConnectedParams};
use ember_core::ops::Out;
use ember_core::Workspace;

use super::gemm::{self, Operands, RowSource, Shape};
use super::scratch::{bytes_for, take};
use super::split::{self, Parts};
use super::stage::{self, StageParams};
use super::{GemvRow, Level, Tensors};

/// Output channels per unit of work split over workers in the matrix-vector product.
const GEMV_UNIT: usize = 16;

/// `y[r, o] = clamp(requant_o(sum_i w[o, i] * (x[r, i] - x_zero_point) + b[o]) + y_zero_point)`: the
/// reference's contract, at level `L`.
pub(crate) fn fully_connected<L: Level>(
    p: &QuantFullyConnectedParams,
    t: Tensors<'_>,
    y: Out<'_, i8>,
    ws: Option<&mut Workspace<'_>>,
) {
    if !run::<L>(p, t, y.data, ws) {
        reference::fully_connected(p, t.x, t.w, t.b, t.requant, y);
    }
}

/// [`fully_connected`] without the fallback: `false`, having written nothing, where it would run the
/// reference (no workspace, too little scratch, data shorter than the dims).
pub(crate) fn run<L: Level>(
    p: &QuantFullyConnectedParams,
    Tensors { x, w, b, requant }: Tensors<'_>,
    y: &mut [i8],
    ws: Option<&mut Workspace<'_>>,
) -> bool {
    let &[n, k] = w.dims else { return false };
    if y.is_empty() {
        return true;
    }
    let rows = y.len() / n.max(1);
    let fits = n > 0
        && y.len() == rows * n
        && x.data.len() == rows * k
        && w.data.len() == n * k
        && b.is_none_or(|b| b.len() == n)
        && (requant.len() == 2 || requant.len() == 2 * n);
    if !fits {
        return false;
    }
    let params = StageParams::from(p);
    if rows <= L::GEMV_MAX_ROWS {
        let op = GemvOperands {
            x: x.data,
            x_zero_point: p.x_zero_point,
            w: w.data,
            n,
            k,
            b,
            requant,
            params,
        };
        gemv::<L>(&op, y, ws)
    } else {
        let op = Operands {
            rows: &MatrixRows { x: x.data, k },
            x_zero_point: p.x_zero_point,
            w: w.data,
            b,
            requant,
            params,
        };
        gemm::run::<L, _>(&shape(rows, n, k), &op, y, ws)
    }
}

fn shape(rows: usize, n: usize, k: usize) -> Shape {
    Shape {
        m: rows,
        k,
        groups: 1,
        n,
        unit: 1,
    }
}

/// Scratch bytes [`fully_connected`] at level `L` asks for (`w`, `y` the tensors' dims).
pub(crate) fn scratch<L: Level>(w: &[usize], y: &[usize], workers: usize) -> usize {
    let &[n, k] = w else { return 0 };
    let rows = y.iter().product::<usize>() / n.max(1);
    if rows <= L::GEMV_MAX_ROWS {
        let parts = split::parts(workers, n.div_ceil(GEMV_UNIT), rows * n * k);
        bytes_for::<i32>(3 * n.next_multiple_of(L::NR))
            + parts * bytes_for::<i16>(L::gemv_tmp_len(k))
    } else {
        gemm::scratch::<L>(&shape(rows, n, k), workers)
    }
}

/// The input's rows as they are.
struct MatrixRows<'a> {
    x: &'a [i8],
    k: usize,
}

impl RowSource for MatrixRows<'_> {
    fn row<'a>(&'a self, m: usize, _group: usize, _buf: &'a mut [i8]) -> &'a [i8] {
        self.x.get(m * self.k..(m + 1) * self.k).unwrap_or(&[])
    }
}

/// A fully connected layer's tensors and parameters, for [`gemv`].
struct GemvOperands<'a> {
    x: &'a [i8],
    x_zero_point: i8,
    /// `n` rows of `k` weights.
    w: &'a [i8],
    n: usize,
    k: usize,
    b: Option<&'a [i32]>,
    requant: &'a [i32],
    params: StageParams,
}

/// The matrix-vector products, one per row, output channels split over the workers. Returns `false`,
/// having written nothing, when the workspace is missing or its scratch too short.
fn gemv<L: Level>(op: &GemvOperands<'_>, y: &mut [i8], ws: Option<&mut Workspace<'_>>) -> bool {
    let Some(ws) = ws else { return false };
    let (n, k) = (op.n, op.k);
    let rows = y.len() / n.max(1);
    let stage_len = 3 * n.next_multiple_of(L::NR);
    let tmp_len = L::gemv_tmp_len(k);
    let room = ws.scratch.len().saturating_sub(bytes_for::<i32>(stage_len));
    let parts = split::parts(ws.workers(), n.div_ceil(GEMV_UNIT), rows * n * k)
        .min(room / bytes_for::<i16>(tmp_len));
    if parts == 0 {
        return false;
    }
    let parallel = ws.parallel;
    let mut rest: &mut [u8] = ws.scratch;
    let Some(arrays) = take::<i32>(&mut rest, stage_len) else {
        return false;
    };
    let simd = stage::fill(arrays, 1, n, n, op.b, op.requant);
    let stage = stage::view(arrays, op.params, simd);

    let out = Parts::new(y);
    let scratch = Parts::new(rest);
    let per_worker = bytes_for::<i16>(tmp_len);
    let job = |i: usize| {
        let units = split::range(n.div_ceil(GEMV_UNIT), parts, i);
        let (first, end) = (units.start * GEMV_UNIT, (units.end * GEMV_UNIT).min(n));
        // SAFETY: part `i` of the scratch belongs to this job alone.
        let mut mine = unsafe { scratch.part(i * per_worker..(i + 1) * per_worker) };
        let Some(tmp) = take::<i16>(&mut mine, tmp_len) else {
            return;
        };
        for r in 0..rows {
            // SAFETY: output channels `first..end` of each row belong to this job alone (the jobs'
            // channel ranges are disjoint), and this job uses one row's at a time.
            let out = unsafe { out.part(r * n + first..r * n + end) };
            let x = op.x.get(r * k..(r + 1) * k).unwrap_or(&[]);
            L::gemv(GemvRow {
                x,
                x_zero_point: op.x_zero_point,
                w: op.w,
                k,
                first,
                stage: stage.skip(first),
                out,
                tmp: &mut *tmp,
            });
        }
    };
    split::run(parallel, parts, &job);
    true
}
