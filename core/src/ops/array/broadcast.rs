//! Broadcast copy: `x` repeated along the axes where it has size 1 (or is missing on the left) to fill
//! `y`. ONNX `Expand` lowers to it, and `Tile` too (as Reshape, Broadcast, Reshape).

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{
    broadcast_strides, check_dims, ensure, gather_strided, rank_to_walk, right_align,
};
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
    let Some(rank) = rank_to_walk(y.dims, y.data.len(), x.data, y.data) else {
        return;
    };
    let aligned = right_align(x.dims, rank);
    let strides = broadcast_strides(&aligned[..rank]);
    gather_strided(x.data, strides, y);
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
