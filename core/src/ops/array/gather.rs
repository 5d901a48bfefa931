//! Gather along one axis with indices fixed at conversion time.
//!
//! The indices are the op's second input: a weight tensor of f32 values that are whole numbers in
//! `0..x[axis]` (the converter resolves ONNX's negative indices; f32 holds every index below 2^24
//! exactly, and the runtime stays f32-only). `Model::parse` checks the values with
//! [`validate_indices`]; the kernel reads them as they are.

pub use crate::schema::GatherParams;

use crate::ops::entry::{out, shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::shape::{check_dims, ensure, require, Checked};
use crate::ops::{In, Out};
use crate::schema::DType;
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

/// Signature of a gather kernel (`x, indices`).
pub type GatherFn = fn(&GatherParams, In<'_>, In<'_>, Out<'_>);

/// The [`Kernels::gather`](crate::Kernels::gather) entry, which runs
/// [`OpKind::Gather`](crate::OpKind::Gather).
pub struct Gather;

impl KernelEntry for Gather {
    type Kernel = GatherFn;
    const REFERENCE: GatherFn = gather;
    const STUB: GatherFn = |_, _, _, _| {};
}

impl OpEntry for Gather {
    type Params = GatherParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &GatherParams, o: &impl Operands) -> Checked {
        require(
            o.out_dtype() == o.dtype(0) && o.dtype(1) == DType::F32,
            "gather needs data and output of one dtype and f32 indices",
        )?;
        shape_reason(validate(p, o.dims(0), o.dims(1), o.out_dims()))?;
        // The indices: a weight tensor of whole numbers inside the axis (read here once, so that the kernel
        // can trust them).
        let indices: &[f32] = o.weight_values(
            1,
            [
                "gather indices must be a weight tensor",
                "gather indices run past the weights section",
                "gather indices are not f32-aligned",
            ],
        )?;
        shape_reason(validate_indices(p, o.dims(0), indices))
    }

    #[inline(always)]
    fn run(kernel: GatherFn, p: &GatherParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        kernel(p, a.x(0)?, a.x(1)?, out(a.y)?);
        Ok(())
    }
}
