//! The broadcasting walk shared by the int8 binary ops (Add, Mul).

use crate::ops::shape::{broadcast_strides, for_each_offset, right_align};
use crate::ops::{In, Out};

/// `y[i] = f(a[ia], b[ib])` where `ia` and `ib` are `i` broadcast into `a` and `b` (numpy rules; the
/// shapes were checked with `check_broadcast`).
///
/// Walks `y` row by row (a row runs along the last axis) with an odometer over the outer axes; within a
/// row, `a` and `b` advance by a fixed step (0 when they are broadcast along it).
#[inline(always)]
pub(crate) fn broadcast_map(
    a: In<'_, i8>,
    b: In<'_, i8>,
    y: Out<'_, i8>,
    f: impl Fn(i8, i8) -> i8,
) {
    if a.dims == b.dims {
        for ((out, &u), &v) in y.data.iter_mut().zip(a.data).zip(b.data) {
            *out = f(u, v);
        }
        return;
    }
    if y.data.is_empty() {
        return;
    }
    // A scalar output is walked as one row of one element.
    let rank = y.dims.len().max(1);
    let y_dims = right_align(y.dims, rank);
    let a_strides = broadcast_strides(&right_align(a.dims, rank)[..rank]);
    let b_strides = broadcast_strides(&right_align(b.dims, rank)[..rank]);
    let row_len = y_dims[rank - 1];
    let (a_step, b_step) = (a_strides[rank - 1], b_strides[rank - 1]);
    let mut rows = y.data.chunks_exact_mut(row_len);
    for_each_offset(
        &y_dims[..rank - 1],
        &[a_strides, b_strides],
        |[a_row, b_row]| {
            if let Some(row) = rows.next() {
                for (i, out) in row.iter_mut().enumerate() {
                    *out = f(a.data[a_row + i * a_step], b.data[b_row + i * b_step]);
                }
            }
        },
    );
}
