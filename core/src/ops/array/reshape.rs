//! Reshape (and Flatten): the bytes stay, the dims change. Normally an alias planned by the converter
//! (the output shares the input's arena bytes) and then free; a copy when the input lives elsewhere.

use crate::ops::entry::{op_entry, out};
use crate::ops::shape::{dims_fit, shape_error, Checked};
use crate::ops::{numel, In, Out};
use crate::Error;

/// Checks that `x` and `y` hold the same number of elements.
pub fn validate(x: &[usize], y: &[usize]) -> Result<(), Error> {
    check(x, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(x: &[usize], y: &[usize]) -> Checked {
    // Bounds the products below (they would overflow on absurd dims).
    dims_fit(x)?;
    dims_fit(y)?;
    if numel(x) == numel(y) {
        Ok(())
    } else {
        Err("reshape changes the number of elements")
    }
}

/// Copies the elements of `x` into `y`.
pub fn reshape<T: Copy>(x: In<'_, T>, y: Out<'_, T>) {
    y.data.copy_from_slice(x.data);
}

/// Signature of a reshape copy (a Reshape that is not planned as an alias of its input).
pub type ReshapeFn = fn(In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::reshape`](crate::Kernels::reshape) entry, which runs
    /// [`OpKind::Reshape`](crate::OpKind::Reshape).
    Reshape: ReshapeFn = reshape, (), Same;
    validate |_, o| check(o.dims(0), o.out_dims());
    run |kernel, _, a| kernel(a.x(0)?, out(a.y)?);
}
