//! 2-D average pooling, NHWC.

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::pool::{pool2d, validate_window, Pool2dFn};
use crate::ops::shape::shape_error;
use crate::ops::{In, Out};
use crate::schema::Pool2dParams;
use crate::Error;

/// Same shape rules as max pooling (see [`max_pool::validate`](super::max_pool::validate)).
pub fn validate(p: &Pool2dParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    validate_window(p, x, y).map_err(shape_error)
}

/// `y` = mean over each window (see `count_include_pad`).
///
/// As ONNX AveragePool: with `count_include_pad` the divisor is the full window `kernel_h * kernel_w`
/// (every window lies inside the padded input, since the output size is floored); without it, the number
/// of input cells the window covers.
pub fn avg_pool(p: &Pool2dParams, x: In<'_>, y: Out<'_>) {
    let full_window = usize::from(p.kernel_h) * usize::from(p.kernel_w);
    let include_pad = p.count_include_pad;
    pool2d(
        p,
        x,
        y,
        0.0,
        |acc, v| acc + v,
        |out, valid_cells| {
            let count = if include_pad {
                full_window
            } else {
                valid_cells
            };
            let scale = 1.0 / count as f32;
            for v in out.iter_mut() {
                *v *= scale;
            }
        },
    );
}

op_entry! {
    /// The [`Kernels::avg_pool`](crate::Kernels::avg_pool) entry, which runs
    /// [`OpKind::AvgPool2d`](crate::OpKind::AvgPool2d).
    AvgPool: Pool2dFn = avg_pool, Pool2dParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
