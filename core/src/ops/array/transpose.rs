//! Permutation of dimensions.

pub use crate::schema::TransposeParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure, gather_strided, row_major_strides};
use crate::ops::{In, Out};
use crate::schema::MAX_RANK;
use crate::Error;

/// Checks that the first `x.len()` entries of `perm` are a permutation and that `y[i] == x[perm[i]]`.
pub fn validate(p: &TransposeParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    let rank = x.len();
    ensure(y.len() == rank, "transpose output rank differs from input")?;
    let mut seen = [false; MAX_RANK];
    for &axis in &p.perm[..rank] {
        let axis = usize::from(axis);
        ensure(
            axis < rank && !seen[axis],
            "transpose perm is not a permutation of the axes",
        )?;
        seen[axis] = true;
    }
    let permuted = y
        .iter()
        .zip(&p.perm[..rank])
        .all(|(&dy, &axis)| dy == x[usize::from(axis)]);
    ensure(
        permuted,
        "transpose output dims are not the input's permuted",
    )
}

/// `y[i0, i1, ...] = x[...]` with the axes permuted.
///
/// Walks `y` in order, reading `x` with its strides permuted (`y` axis `i` steps by `x`'s stride of axis
/// `perm[i]`).
pub fn transpose<T: Copy>(p: &TransposeParams, x: In<'_, T>, y: Out<'_, T>) {
    let rank = x.dims.len();
    let perm = &p.perm[..rank];
    let identity = perm.iter().enumerate().all(|(i, &a)| usize::from(a) == i);
    if identity {
        y.data.copy_from_slice(x.data);
        return;
    }
    if y.data.is_empty() {
        return;
    }
    // rank >= 2 here: ranks 0 and 1 only have the identity.
    let x_strides = row_major_strides(x.dims);
    let mut strides = [0; MAX_RANK];
    for (s, &axis) in strides.iter_mut().zip(perm) {
        *s = x_strides[usize::from(axis)];
    }
    gather_strided(x.data, strides, y);
}

/// Signature of a transpose kernel.
pub type TransposeFn = fn(&TransposeParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::transpose`](crate::Kernels::transpose) entry, which runs
    /// [`OpKind::Transpose`](crate::OpKind::Transpose).
    Transpose: TransposeFn = transpose, TransposeParams, Same;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
