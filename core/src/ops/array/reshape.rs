//! Reshape (and Flatten): the bytes stay, the dims change. Normally an alias planned by the converter
//! (the output shares the input's arena bytes) and then free; a copy when the input lives elsewhere.

use crate::ops::shape::check_dims;
use crate::ops::{numel, In, Out};
use crate::Error;

/// Checks that `x` and `y` hold the same number of elements.
pub fn validate(x: &[usize], y: &[usize]) -> Result<(), Error> {
    // Bounds the products below (they would overflow on absurd dims).
    check_dims(x)?;
    check_dims(y)?;
    if numel(x) == numel(y) {
        Ok(())
    } else {
        Err(Error::Shape {
            reason: "reshape changes the number of elements",
        })
    }
}

/// Copies the elements of `x` into `y`.
pub fn reshape<T: Copy>(x: In<'_, T>, y: Out<'_, T>) {
    y.data.copy_from_slice(x.data);
}
