//! Broadcast copy: `x` repeated along the axes where it has size 1 (or is missing on the left) to fill
//! `y`. ONNX `Expand` lowers to it, and `Tile` too (as Reshape, Broadcast, Reshape).

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{broadcast_strides, check_dims, ensure, for_each_offset, right_align};
use crate::ops::{In, Out};
use crate::Error;

/// Checks that `x` broadcasts to exactly `y` (numpy rules, one way: `x`'s rank is at most `y`'s, and
/// each of `x`'s dims, right-aligned, equals `y`'s or is 1).
pub fn validate(x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(y)?;
    ensure(
        x.len() <= y.len(),
        "broadcast input rank is above the output's",
    )?;
    let fits = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .all(|(&dx, &dy)| dx == dy || dx == 1);
    ensure(fits, "broadcast input dims are neither the output's nor 1")
}

/// `y[i...] = x[i...]` with the index taken as 0 along `x`'s size-1 (and missing) axes.
pub fn broadcast<T: Copy>(x: In<'_, T>, y: Out<'_, T>) {
    if y.data.is_empty() {
        return;
    }
    let rank = y.dims.len();
    if rank == 0 {
        y.data.copy_from_slice(x.data);
        return;
    }
    let aligned = right_align(x.dims, rank);
    let strides = broadcast_strides(&aligned[..rank]);
    let row_len = y.dims[rank - 1];
    let step = strides[rank - 1];
    let mut rows = y.data.chunks_exact_mut(row_len);
    for_each_offset(&y.dims[..rank - 1], &[strides], |[start]| {
        if let Some(row) = rows.next() {
            for (i, out) in row.iter_mut().enumerate() {
                *out = x.data[start + i * step];
            }
        }
    });
}

/// Signature of a broadcast copy.
pub type BroadcastFn = fn(In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::broadcast`](crate::Kernels::broadcast) entry, which runs
    /// [`OpKind::Broadcast`](crate::OpKind::Broadcast).
    Broadcast: BroadcastFn = broadcast, (), Same;
    validate |_, o| shape_reason(validate(o.dims(0), o.out_dims()));
    run |kernel, _, a| kernel(a.x(0)?, out(a.y)?);
}
