//! Batched matrix multiply with numpy broadcasting of the batch dimensions (ONNX MatMul): one GEMM per
//! batch index of the output, `a`'s matrix as `A` and `b`'s (row-major `[K, N]`) as `B`, both
//! activations, so `B` is packed on every call.

use ember_core::ops::nn::matmul::{self as reference, MatMulParams};
use ember_core::ops::{In, Out, MAX_RANK};
use ember_core::{Parallel, Workspace};

use crate::gemm::{AMat, BMat, Epilogue, Gemm};
use crate::level::Level;
use crate::scratch::{bytes_for, Carve};

use super::run_or_fall_back;
use ember_core::ops::math::activation::Activation;

/// The GEMM of one batch index for output dims `y` and inner dimension `k`.
fn plan(level: &'static Level, y: &[usize], k: usize) -> Gemm {
    let rank = y.len();
    Gemm::new(level, y[rank - 2], y[rank - 1], k)
}

/// Scratch bytes `matmul` asks for on `level` (any number of workers).
pub(crate) fn scratch_bytes(level: &'static Level, a: &[usize], y: &[usize]) -> usize {
    let g = plan(level, y, a[a.len() - 1]);
    bytes_for(&[g.scratch_len(&BMat::Rows { data: &[], ld: g.n })])
}

/// Element strides of operand dims `dims` along the batch axes of a rank-`rank` output (right-aligned;
/// 0 where the operand has no such axis or broadcasts it).
fn batch_strides(dims: &[usize], rank: usize) -> [usize; MAX_RANK] {
    let mut strides = [0; MAX_RANK];
    let mut step = dims.iter().rev().take(2).product::<usize>();
    for (i, &d) in dims.iter().enumerate().rev().skip(2) {
        let axis = rank - dims.len() + i;
        strides[axis] = if d == 1 { 0 } else { step };
        step *= d;
    }
    strides
}

/// `y = a @ b` with `level`'s kernels; the reference kernel without enough scratch.
pub(crate) fn matmul(
    level: &'static Level,
    p: &MatMulParams,
    a: In<'_>,
    b: In<'_>,
    y: Out<'_>,
    ws: Option<&mut Workspace<'_>>,
) {
    let run = |workers, y: Out<'_>, scratch: &mut Carve<'_>, par: Option<&dyn Parallel>| {
        let rank = y.dims.len();
        let k = a.dims[a.dims.len() - 1];
        let g = plan(level, y.dims, k);
        let (m, n) = (g.m, g.n);
        let len = g.scratch_len(&BMat::Rows { data: &[], ld: n });
        let Some([packed]) = scratch.take_all([len]) else {
            return false;
        };
        let (a_strides, b_strides) = (batch_strides(a.dims, rank), batch_strides(b.dims, rank));
        let batch = &y.dims[..rank - 2];
        let mut index = [0usize; MAX_RANK];
        for y_mat in y.data.chunks_exact_mut(m * n) {
            let offset = |strides: &[usize; MAX_RANK]| -> usize {
                index[..batch.len()]
                    .iter()
                    .zip(strides)
                    .map(|(i, s)| i * s)
                    .sum()
            };
            let am = AMat {
                data: &a.data[offset(&a_strides)..],
                ld: k,
            };
            let bm = BMat::Rows {
                data: &b.data[offset(&b_strides)..],
                ld: n,
            };
            let ep = Epilogue::act(Activation::None);
            // The scratch is long enough (taken above), so this cannot fail.
            let done = g.gemm(am, bm, &ep, y_mat, n, packed, par, workers);
            debug_assert!(done);
            // Next batch index, last axis fastest.
            for (i, &d) in index[..batch.len()].iter_mut().zip(batch).rev() {
                *i += 1;
                if *i < d {
                    break;
                }
                *i = 0;
            }
        }
        true
    };
    run_or_fall_back(level, y, ws, run, |y| reference::matmul(p, a, b, y))
}
