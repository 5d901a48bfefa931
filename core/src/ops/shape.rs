//! Shape arithmetic shared by the reference kernels: the checks every `validate` starts with, numpy
//! broadcasting, row-major strides, and an odometer that walks several tensors in step without dividing.

use crate::ops::{In, Out};
use crate::schema::MAX_RANK;
use crate::Error;

/// What a shape check gives: `Err` holds the reason. It comes back in registers, where an [`Error`]
/// goes through memory at every check on a 32-bit target. The validators of the common ops check this
/// way: [`Model::parse`](crate::Model::parse) turns the reason into `Error::BadOp` once, and each op's
/// public `validate` into `Error::Shape`.
pub(crate) type Checked<T = ()> = Result<T, &'static str>;

/// `Ok(())` when `cond` holds, else `reason`.
#[inline]
pub(crate) fn require(cond: bool, reason: &'static str) -> Checked {
    if cond {
        Ok(())
    } else {
        Err(reason)
    }
}

/// The shape error saying `reason`.
pub(crate) fn shape_error(reason: &'static str) -> Error {
    Error::Shape { reason }
}

/// Declares `pub fn validate`, the public form of the file's `check` over the same parameters: the
/// same checks, failing with [`Error::Shape`] and the reason (`check` gives the reason alone, which
/// `Model::parse` turns into its own error).
macro_rules! validate_by_check {
    ($(#[$doc:meta])* ($($arg:ident: $ty:ty),* $(,)?)) => {
        $(#[$doc])*
        pub fn validate($($arg: $ty),*) -> Result<(), $crate::Error> {
            check($($arg),*).map_err($crate::ops::shape::shape_error)
        }
    };
}
pub(crate) use validate_by_check;

/// `Ok(())` when `cond` holds, else a shape error saying `reason`.
pub(crate) fn ensure(cond: bool, reason: &'static str) -> Result<(), Error> {
    if cond {
        Ok(())
    } else {
        Err(Error::Shape { reason })
    }
}

/// Checks what every kernel relies on for any tensor: rank at most [`MAX_RANK`], and the product of its
/// non-zero dims fits in `usize`. The second makes every partial product of the dims, and every offset of
/// an in-bounds index, fit too, even when a zero dim leaves the tensor empty.
#[inline]
pub(crate) fn check_dims(dims: &[usize]) -> Result<(), Error> {
    dims_fit(dims).map_err(shape_error)
}

/// [`check_dims`] as a [`Checked`].
#[inline]
pub(crate) fn dims_fit(dims: &[usize]) -> Checked {
    match dims_problem(dims) {
        None => Ok(()),
        Some(reason) => Err(reason),
    }
}

/// [`check_dims`]' test, out of line (validators call it for nearly every tensor) and returning what is
/// wrong in registers rather than an `Error` through memory.
#[inline(never)]
fn dims_problem(dims: &[usize]) -> Option<&'static str> {
    if dims.len() > MAX_RANK {
        return Some("tensor rank is above 6 (MAX_RANK)");
    }
    let product = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d.max(1)));
    product.is_none().then_some("tensor dims overflow usize")
}

/// Whether two shapes are equal, element by element and out of line: with it, the validators of the
/// common ops link no `memcmp` (which `==` on slices calls).
#[inline(never)]
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// `a + b + c`, or a shape error when that overflows.
pub(crate) fn checked_sum3(a: usize, b: usize, c: usize) -> Result<usize, Error> {
    sum3(a, b, c).map_err(shape_error)
}

/// [`checked_sum3`] as a [`Checked`].
pub(crate) fn sum3(a: usize, b: usize, c: usize) -> Checked<usize> {
    a.checked_add(b)
        .and_then(|s| s.checked_add(c))
        .ok_or("padded size overflows usize")
}

/// Checks that `a` and `b` broadcast (numpy rules: right-aligned, a dim of 1 stretches) to exactly `y`.
pub(crate) fn check_broadcast(a: &[usize], b: &[usize], y: &[usize]) -> Result<(), Error> {
    ensure(
        y.len() == a.len().max(b.len()),
        "output rank is not the larger input rank",
    )?;
    let ones = core::iter::repeat(&1usize);
    let a_dims = a.iter().rev().chain(ones.clone());
    let b_dims = b.iter().rev().chain(ones);
    for ((&dy, &da), &db) in y.iter().rev().zip(a_dims).zip(b_dims) {
        let want = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Shape {
                reason: "input dims do not broadcast (differ and neither is 1)",
            });
        };
        ensure(
            dy == want,
            "output dims are not the broadcast of the inputs",
        )?;
    }
    Ok(())
}

/// `dims` right-aligned in the first `rank` entries, with leading 1s (numpy broadcasting).
/// Needs `dims.len() <= rank <= MAX_RANK`.
pub(crate) fn right_align(dims: &[usize], rank: usize) -> [usize; MAX_RANK] {
    let mut out = [1; MAX_RANK];
    out[rank - dims.len()..rank].copy_from_slice(dims);
    out
}

/// Row-major strides of `dims` (`dims.len() <= MAX_RANK`), in the first `dims.len()` entries.
pub(crate) fn row_major_strides(dims: &[usize]) -> [usize; MAX_RANK] {
    let mut strides = [0; MAX_RANK];
    let mut step = 1usize;
    for (s, &d) in strides.iter_mut().zip(dims).rev() {
        *s = step;
        step *= d;
    }
    strides
}

/// Row-major strides of `dims`, with 0 on axes of size 1: walking a larger (broadcast) shape with them
/// repeats the elements along those axes.
pub(crate) fn broadcast_strides(dims: &[usize]) -> [usize; MAX_RANK] {
    let mut strides = row_major_strides(dims);
    for (s, &d) in strides.iter_mut().zip(dims) {
        if d == 1 {
            *s = 0;
        }
    }
    strides
}

/// What the row-by-row copies (broadcast, slice, pad) do first: the rank of the tensor they walk (of
/// `walked` dims and `len` elements) when it has rows to walk; `None` when it is empty, or when it is a
/// scalar, whose one element this copies from `x` to `y`.
#[inline]
pub(crate) fn rank_to_walk<T: Copy>(
    walked: &[usize],
    len: usize,
    x: &[T],
    y: &mut [T],
) -> Option<usize> {
    if len == 0 {
        return None;
    }
    if walked.is_empty() {
        y.copy_from_slice(x);
        return None;
    }
    Some(walked.len())
}

/// `y[i...] = x[sum(i[d] * strides[d])]`: fills `y` (rank >= 1) row by row (last axis), reading `x`
/// at `strides` (one per axis of `y`; a broadcast axis has 0, a transpose permutes `x`'s).
pub(crate) fn gather_strided<T: Copy>(x: &[T], strides: [usize; MAX_RANK], y: Out<'_, T>) {
    let rank = y.dims.len();
    let row_len = y.dims[rank - 1];
    let step = strides[rank - 1];
    let mut rows = y.data.chunks_exact_mut(row_len);
    for_each_offset(&y.dims[..rank - 1], &[strides], |[start]| {
        if let Some(row) = rows.next() {
            for (i, out) in row.iter_mut().enumerate() {
                *out = x[start + i * step];
            }
        }
    });
}

/// Calls `f` once per index of `dims` (`dims.len() <= MAX_RANK`), in row-major order, with, for each of
/// `K` tensors, the offset `sum(index[d] * strides[k][d])`. Calls nothing when a dim is zero, and once
/// (with offsets 0) when `dims` is empty.
pub(crate) fn for_each_offset<const K: usize>(
    dims: &[usize],
    strides: &[[usize; MAX_RANK]; K],
    mut f: impl FnMut([usize; K]),
) {
    if dims.contains(&0) {
        return;
    }
    let mut index = [0usize; MAX_RANK];
    let mut offsets = [0usize; K];
    loop {
        f(offsets);
        // Advance the odometer: bump the last axis, carrying into earlier ones.
        let mut axis = dims.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < dims[axis] {
                for (o, s) in offsets.iter_mut().zip(strides) {
                    *o += s[axis];
                }
                break;
            }
            for (o, s) in offsets.iter_mut().zip(strides) {
                *o -= s[axis] * (dims[axis] - 1);
            }
            index[axis] = 0;
        }
    }
}

/// Sum of `a[i] * b[i]` over the shorter length, accumulated in order.
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0.0, |acc, (&u, &v)| acc + u * v)
}

/// `y[i] = f(a[ia], b[ib])` where `ia` and `ib` are `i` broadcast into `a` and `b` (numpy rules; the
/// shapes were checked with [`check_broadcast`]).
///
/// Walks `y` row by row (a row runs along the last axis) with an odometer over the outer axes; within a
/// row, `a` and `b` advance by a fixed step (0 when they are broadcast along it).
#[inline(always)]
pub(crate) fn broadcast_zip<A: Copy, B: Copy, C>(
    a: In<'_, A>,
    b: In<'_, B>,
    y: Out<'_, C>,
    f: impl Fn(A, B) -> C,
) {
    if a.dims == b.dims {
        // No broadcasting: y has this shape too.
        for ((out, &u), &v) in y.data.iter_mut().zip(a.data).zip(b.data) {
            *out = f(u, v);
        }
        return;
    }
    broadcast_rows(
        [a.dims, b.dims],
        y,
        |row, [a_row, b_row], [a_step, b_step]| {
            for (i, out) in row.iter_mut().enumerate() {
                *out = f(a.data[a_row + i * a_step], b.data[b_row + i * b_step]);
            }
        },
    );
}

/// The walk of [`broadcast_zip`] and [`broadcast_zip3`]: `row(y_row, starts, steps)` for each row of `y`
/// (a scalar `y` is one row of one element), with, for each of the `K` inputs (of dims `ins`,
/// broadcast to `y`), the offset of the row's first element and the step along the row (0 when the
/// input is broadcast along it).
#[inline(always)]
fn broadcast_rows<T, const K: usize>(
    ins: [&[usize]; K],
    y: Out<'_, T>,
    mut row: impl FnMut(&mut [T], [usize; K], [usize; K]),
) {
    if y.data.is_empty() {
        return;
    }
    let rank = y.dims.len().max(1);
    let y_dims = right_align(y.dims, rank);
    let strides = ins.map(|dims| broadcast_strides(&right_align(dims, rank)[..rank]));
    let steps = strides.map(|s| s[rank - 1]);
    let mut rows = y.data.chunks_exact_mut(y_dims[rank - 1]);
    for_each_offset(&y_dims[..rank - 1], &strides, |starts| {
        if let Some(y_row) = rows.next() {
            row(y_row, starts, steps);
        }
    });
}

/// Like [`broadcast_zip`] for three inputs (`Where`).
pub(crate) fn broadcast_zip3<A: Copy, B: Copy, C: Copy, D>(
    a: In<'_, A>,
    b: In<'_, B>,
    c: In<'_, C>,
    y: Out<'_, D>,
    f: impl Fn(A, B, C) -> D,
) {
    broadcast_rows(
        [a.dims, b.dims, c.dims],
        y,
        |row, [a_row, b_row, c_row], steps| {
            for (i, out) in row.iter_mut().enumerate() {
                *out = f(
                    a.data[a_row + i * steps[0]],
                    b.data[b_row + i * steps[1]],
                    c.data[c_row + i * steps[2]],
                );
            }
        },
    );
}
