//! Strided slice: every axis keeps `y[i]` elements, starting at `start[i]` and stepping by `step[i]`
//! (negative steps walk backwards). ONNX `Slice` and each output of `Split` lower to it; the converter
//! resolves negative and out-of-range starts and ends, and the output dims carry the counts.

pub use crate::schema::SliceParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure, rank_to_walk, row_major_strides};
use crate::ops::{In, Out};
use crate::schema::MAX_RANK;
use crate::Error;

/// Checks that `y` has `x`'s rank and that, on every non-empty output axis, the first and last input
/// indices read (`start` and `start + (y[i] - 1) * step`) lie inside `x`.
pub fn validate(p: &SliceParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(y)?;
    ensure(y.len() == x.len(), "slice output rank differs from input")?;
    if y.contains(&0) {
        return Ok(());
    }
    for (i, (&dx, &dy)) in x.iter().zip(y).enumerate() {
        ensure(p.step[i] != 0, "slice step is zero")?;
        let first = i128::from(p.start[i]);
        let last = first + (dy as i128 - 1) * i128::from(p.step[i]);
        let inside = |v: i128| v >= 0 && v < dx as i128;
        ensure(
            inside(first) && inside(last),
            "slice reads past the input on some axis",
        )?;
    }
    Ok(())
}

/// `y[j0, j1, ...] = x[start[0] + j0 * step[0], start[1] + j1 * step[1], ...]`.
///
/// Walks `y` row by row (last axis), carrying a signed input offset like an odometer.
pub fn slice<T: Copy>(p: &SliceParams, x: In<'_, T>, y: Out<'_, T>) {
    let Some(rank) = rank_to_walk(y.dims, y.data.len(), x.data, y.data) else {
        return;
    };
    let x_strides = row_major_strides(x.dims);
    let mut jump = [0isize; MAX_RANK];
    let mut base = 0isize;
    for i in 0..rank {
        jump[i] = p.step[i] as isize * x_strides[i] as isize;
        base += p.start[i] as isize * x_strides[i] as isize;
    }
    let row_len = y.dims[rank - 1];
    let step = jump[rank - 1];
    let mut index = [0usize; MAX_RANK];
    for row in y.data.chunks_exact_mut(row_len) {
        let mut at = base;
        for out in row.iter_mut() {
            // In bounds: `validate` checked the first and last index of every axis.
            *out = x.data[at as usize];
            at += step;
        }
        let mut axis = rank - 1;
        while axis > 0 {
            axis -= 1;
            index[axis] += 1;
            if index[axis] < y.dims[axis] {
                base += jump[axis];
                break;
            }
            base -= jump[axis] * (y.dims[axis] as isize - 1);
            index[axis] = 0;
        }
    }
}

/// Signature of a strided slice kernel.
pub type SliceFn = fn(&SliceParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::slice`](crate::Kernels::slice) entry, which runs
    /// [`OpKind::Slice`](crate::OpKind::Slice).
    Slice: SliceFn = slice, SliceParams, Same;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
