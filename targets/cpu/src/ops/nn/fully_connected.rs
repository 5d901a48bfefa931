//! Fully connected layer (`y = act(x * W^T + b)`, `x [..., K]`, `W [N, K]`) as one GEMM: the rows of `x`
//! are `A`, `W`'s rows are the columns of `B`. One row (batch 1, the common case) is a GEMV that reads
//! each row of `W` once, vectorized along `K`; more rows pack `W` into panels.

use ember_core::ops::nn::fully_connected::{self as reference, FullyConnectedParams};
use ember_core::ops::{In, Out};
use ember_core::Workspace;

use crate::gemm::{AMat, BMat, Epilogue, Gemm};
use crate::level::Level;
use crate::scratch::{bytes_for, Carve};

/// The GEMM of a fully connected layer with weights `w` `[N, K]` and output `y` `[..., N]`.
fn plan(level: &'static Level, w: &[usize], y: &[usize]) -> Gemm {
    let (n, k) = (w[0], w[1]);
    let m = y.iter().product::<usize>() / n.max(1);
    Gemm::new(level, m, n, k)
}

/// Scratch bytes `fully_connected` asks for on `level` (any number of workers).
pub(crate) fn scratch_bytes(level: &'static Level, w: &[usize], y: &[usize]) -> usize {
    let g = plan(level, w, y);
    bytes_for(&[g.scratch_len(&BMat::Cols { data: &[], ld: g.k })])
}

/// `y = act(x * W^T + b)` with `level`'s kernels; the reference kernel without enough scratch.
pub(crate) fn fully_connected(
    level: &'static Level,
    p: &FullyConnectedParams,
    x: In<'_>,
    w: In<'_>,
    b: Option<&[f32]>,
    y: Out<'_>,
    ws: Option<&mut Workspace<'_>>,
) {
    if y.data.is_empty() {
        return;
    }
    if let (true, Some(ws)) = (level.runs_here(), ws) {
        let g = plan(level, w.dims, y.dims);
        let (n, k) = (g.n, g.k);
        let wb = BMat::Cols {
            data: w.data,
            ld: k,
        };
        let (par, workers) = (ws.parallel, ws.workers());
        if let Some([packed]) = Carve::new(ws.scratch).take_all([g.scratch_len(&wb)]) {
            let a = AMat {
                data: x.data,
                ld: k,
            };
            let ep = Epilogue {
                bias: b,
                residual: None,
                act: p.act,
            };
            if g.gemm(a, wb, &ep, y.data, n, packed, par, workers) {
                return;
            }
        }
    }
    crate::ops::fell_back();
    reference::fully_connected(p, x, w, b, y)
}
