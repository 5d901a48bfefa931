//! Gather along one axis with indices fixed at conversion time.
//!
//! The indices are the op's second input: a weight tensor of f32 values that are whole numbers in
//! `0..x[axis]` (the converter resolves ONNX's negative indices; f32 holds every index below 2^24
//! exactly, and the runtime stays f32-only). `Model::parse` checks the values with
//! [`validate_indices`]; the kernel reads them as they are.

pub use crate::schema::GatherParams;

use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// Checks that `y` is `x` with dim `axis` replaced by the dims of `indices`.
pub fn validate(
    p: &GatherParams,
    x: &[usize],
    indices: &[usize],
    y: &[usize],
) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(indices)?;
    check_dims(y)?;
    let axis = usize::from(p.axis);
    ensure(axis < x.len(), "gather axis is not below the input rank")?;
    let fits = y.len() == x.len() - 1 + indices.len()
        && y[..axis] == x[..axis]
        && y[axis..axis + indices.len()] == *indices
        && y[axis + indices.len()..] == x[axis + 1..];
    ensure(
        fits,
        "gather output dims are not the input's with the axis replaced by the indices' dims",
    )
}

/// Checks that every index is a whole number in `0..x[axis]` (`axis` checked by [`validate`]).
pub fn validate_indices(p: &GatherParams, x: &[usize], indices: &[f32]) -> Result<(), Error> {
    let len = x.get(usize::from(p.axis)).copied().unwrap_or(0) as f32;
    let ok = indices
        .iter()
        .all(|&i| i >= 0.0 && i < len && i == (i as u32) as f32);
    ensure(ok, "gather index is not a whole number inside the axis")
}

/// `y[o, j, r] = x[o, indices[j], r]`, seeing `x` as `[outer, x[axis], inner]` and `y` as
/// `[outer, indices.len(), inner]`: one contiguous run of `inner` elements per (outer, index).
pub fn gather<T: Copy + Default>(p: &GatherParams, x: In<'_, T>, indices: In<'_>, y: Out<'_, T>) {
    if y.data.is_empty() {
        return;
    }
    let axis = usize::from(p.axis);
    let len = x.dims[axis];
    let inner: usize = x.dims[axis + 1..].iter().product();
    if len == 0 {
        // Only reachable with unchecked indices (no index is inside an empty axis).
        y.data.fill(T::default());
        return;
    }
    let mut runs = y.data.chunks_exact_mut(inner);
    for plane in x.data.chunks_exact(len * inner) {
        for &i in indices.data {
            let Some(run) = runs.next() else { return };
            let start = (i as usize).saturating_mul(inner);
            // Indices were checked by `validate_indices`; an unchecked bad one reads zeros.
            match plane.get(start..start.saturating_add(inner)) {
                Some(src) => run.copy_from_slice(src),
                None => run.fill(T::default()),
            }
        }
    }
}
