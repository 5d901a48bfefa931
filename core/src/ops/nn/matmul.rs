//! Batched matrix multiply with numpy broadcasting of the batch dimensions (ONNX MatMul).

pub use crate::schema::MatMulParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{
    broadcast_strides, check_broadcast, check_dims, ensure, for_each_offset, right_align,
};
use crate::ops::{In, Out};
use crate::workspace::Workspace;
use crate::Error;

/// Checks the shapes: `a` `[..., M, K]`, `b` `[..., K, N]` (both rank >= 2; the converter turns ONNX's
/// rank-1 operands into rank 2), batch dims broadcast (numpy rules) to `y`'s, and `y` `[..., M, N]`.
pub fn validate(_p: &MatMulParams, a: &[usize], b: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(a)?;
    check_dims(b)?;
    check_dims(y)?;
    ensure(
        a.len() >= 2 && b.len() >= 2,
        "matmul operands need rank >= 2",
    )?;
    ensure(y.len() >= 2, "matmul output needs rank >= 2")?;
    let (a_batch, a_mat) = a.split_at(a.len() - 2);
    let (b_batch, b_mat) = b.split_at(b.len() - 2);
    let (y_batch, y_mat) = y.split_at(y.len() - 2);
    ensure(
        a_mat[1] == b_mat[0],
        "matmul inner dims differ (a's last is not b's second to last)",
    )?;
    ensure(
        y_mat[0] == a_mat[0] && y_mat[1] == b_mat[1],
        "matmul output's last two dims are not [M, N]",
    )?;
    check_broadcast(a_batch, b_batch, y_batch)
}

/// `y = a @ b`.
///
/// For each batch index of `y`, multiplies the matching (broadcast) matrices of `a` and `b` in i-k-j order,
/// so that the inner loop runs over contiguous rows of `b` and `y`.
pub fn matmul(_p: &MatMulParams, a: In<'_>, b: In<'_>, y: Out<'_>) {
    let rank = y.dims.len();
    let (m, k) = (a.dims[a.dims.len() - 2], a.dims[a.dims.len() - 1]);
    let n = b.dims[b.dims.len() - 1];
    if y.data.is_empty() {
        return;
    }
    // Strides over the whole right-aligned shape; only the batch axes' are used, and on those they step
    // by whole matrices (0 where the operand is broadcast).
    let a_strides = broadcast_strides(&right_align(a.dims, rank)[..rank]);
    let b_strides = broadcast_strides(&right_align(b.dims, rank)[..rank]);
    let mut y_mats = y.data.chunks_exact_mut(m * n);
    for_each_offset(
        &y.dims[..rank - 2],
        &[a_strides, b_strides],
        |[a_off, b_off]| {
            if let Some(y_mat) = y_mats.next() {
                matmul_2d(
                    &a.data[a_off..][..m * k],
                    &b.data[b_off..][..k * n],
                    y_mat,
                    k,
                    n,
                );
            }
        },
    );
}

/// `y = a @ b` for one `[M, K] @ [K, N]` pair; `n > 0`.
fn matmul_2d(a: &[f32], b: &[f32], y: &mut [f32], k: usize, n: usize) {
    y.fill(0.0);
    if k == 0 {
        return;
    }
    for (y_row, a_row) in y.chunks_exact_mut(n).zip(a.chunks_exact(k)) {
        for (&a_ik, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
            for (out, &b_kj) in y_row.iter_mut().zip(b_row) {
                *out += a_ik * b_kj;
            }
        }
    }
}

/// Signature of a matrix multiply kernel.
pub type MatMulFn = fn(&MatMulParams, In<'_>, In<'_>, Out<'_>, Option<&mut Workspace<'_>>);

/// [`matmul`] in the table's signature: it needs no scratch and runs on one thread.
fn reference(p: &MatMulParams, a: In<'_>, b: In<'_>, y: Out<'_>, _: Option<&mut Workspace<'_>>) {
    matmul(p, a, b, y)
}

op_entry! {
    /// The [`Kernels::matmul`](crate::Kernels::matmul) entry, which runs
    /// [`OpKind::MatMul`](crate::OpKind::MatMul).
    MatMul: MatMulFn = reference, MatMulParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.dims(1), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, out(a.y)?, a.ws);
}
