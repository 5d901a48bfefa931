//! 2-D max pooling, NHWC.

use crate::ops::entry::{op_entry, out};
use crate::ops::pool::{pool2d, validate_window, Pool2dFn};
use crate::ops::shape::{shape_error, Checked};
use crate::ops::{In, Out};
use crate::schema::Pool2dParams;
use crate::Error;

/// Checks `x` `[N, H, W, C]`, `y` `[N, OH, OW, C]` with `OH = (H + pad_top + pad_bottom - KH) / stride_h + 1`
/// (floor; likewise OW), window and strides non-zero, and every window overlapping at least one valid cell.
pub fn validate(p: &Pool2dParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    validate_window(p, x, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(p: &Pool2dParams, x: &[usize], y: &[usize]) -> Checked {
    validate_window(p, x, y)
}

/// `y` = maximum over each window (padding never wins).
pub fn max_pool(p: &Pool2dParams, x: In<'_>, y: Out<'_>) {
    pool2d(p, x, y, f32::NEG_INFINITY, f32::max, |_, _| {});
}

op_entry! {
    /// The [`Kernels::max_pool`](crate::Kernels::max_pool) entry, which runs
    /// [`OpKind::MaxPool2d`](crate::OpKind::MaxPool2d).
    MaxPool: Pool2dFn = max_pool, Pool2dParams, F32;
    validate |p, o| check(p, o.dims(0), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
