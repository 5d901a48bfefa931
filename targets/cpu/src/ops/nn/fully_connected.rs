//! Fully connected layer (`y = act(x * W^T + b)`, `x [..., K]`, `W [N, K]`) as one GEMM: the rows of `x`
//! are `A`, `W`'s rows are the columns of `B`. One row (batch 1, the common case) is a GEMV that reads
//! each row of `W` once, vectorized along `K`; more rows pack `W` into panels.

use ember_core::ops::nn::fully_connected::{self as reference, FullyConnectedParams};
use ember_core::ops::Out;
use ember_core::{Parallel, Workspace};

use crate::gemm::{AMat, BMat, Epilogue, Gemm};
use crate::level::Level;
use crate::scratch::{bytes_for, Carve};

use super::{run_or_fall_back, Tensors};

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
    Tensors { x, w, b }: Tensors<'_>,
    y: Out<'_>,
    ws: Option<&mut Workspace<'_>>,
) {
    let run = |workers, y: Out<'_>, scratch: &mut Carve<'_>, par: Option<&dyn Parallel>| {
        let g = plan(level, w.dims, y.dims);
        let (n, k) = (g.n, g.k);
        let wb = BMat::Cols {
            data: w.data,
            ld: k,
        };
        let Some([packed]) = scratch.take_all([g.scratch_len(&wb)]) else {
            return false;
        };
        let a = AMat {
            data: x.data,
            ld: k,
        };
        let ep = Epilogue {
            bias: b,
            residual: None,
            act: p.act,
        };
        g.gemm(a, wb, &ep, y.data, n, packed, par, workers)
    };
    run_or_fall_back(level, y, ws, run, |y| {
        reference::fully_connected(p, x, w, b, y)
    })
}
