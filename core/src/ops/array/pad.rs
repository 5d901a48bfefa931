//! Constant padding.

pub use crate::schema::PadParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{
    check_dims, checked_sum3, ensure, for_each_offset, rank_to_walk, row_major_strides,
};
use crate::ops::{In, Out};
use crate::Error;

/// Checks `y[i] == before[i] + x[i] + after[i]` for every axis (entries past the rank are ignored).
pub fn validate(p: &PadParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(y)?;
    ensure(y.len() == x.len(), "pad output rank differs from input")?;
    for (i, (&dx, &dy)) in x.iter().zip(y).enumerate() {
        let want = checked_sum3(dx, p.before[i] as usize, p.after[i] as usize)?;
        ensure(dy == want, "pad output dims are not before + input + after")?;
    }
    Ok(())
}

/// Copies `x` into the middle of `y` and fills the border with `value`.
pub fn pad(p: &PadParams, x: In<'_>, y: Out<'_>) {
    pad_with(p, p.value, x, y);
}

/// [`pad`] for any element type, filling with `value` (the caller converts `p.value`).
///
/// Fills all of `y`, then copies each row (last axis) of `x` to its place.
pub fn pad_with<T: Copy>(p: &PadParams, value: T, x: In<'_, T>, y: Out<'_, T>) {
    y.data.fill(value);
    let Some(rank) = rank_to_walk(x.dims, x.data.len(), x.data, y.data) else {
        return;
    };
    let y_strides = row_major_strides(y.dims);
    let corner: usize = (0..rank).map(|i| p.before[i] as usize * y_strides[i]).sum();
    let row_len = x.dims[rank - 1];
    let mut rows = x.data.chunks_exact(row_len);
    for_each_offset(&x.dims[..rank - 1], &[y_strides], |[offset]| {
        if let Some(row) = rows.next() {
            y.data[corner + offset..][..row_len].copy_from_slice(row);
        }
    });
}

/// Signature of a pad kernel.
pub type PadFn = fn(&PadParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::pad`](crate::Kernels::pad) entry, which runs
    /// [`OpKind::Pad`](crate::OpKind::Pad).
    Pad: PadFn = pad, PadParams, Same;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
