//! int8 2-D average pooling, NHWC (TFLM's int8 `AveragePool`): input and output share their
//! quantization, so the mean of the stored values, rounded, is the output.

pub use crate::schema::QuantAvgPoolParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::pool::avg_pool as float_avg_pool;
use crate::ops::quant::pool::pool2d;
use crate::ops::quant::requant::clamp_to_i8;
use crate::ops::shape::ensure;
use crate::ops::{In, Out};
use crate::Error;

/// Largest window area (`kernel_h * kernel_w`) whose int32 sum of int8 values cannot overflow.
pub const MAX_WINDOW_AREA: usize = 1 << 23;

/// The float average pooling's shape rules (see [`pool::avg_pool::validate`](float_avg_pool::validate)),
/// and a window area of at most [`MAX_WINDOW_AREA`].
pub fn validate(p: &QuantAvgPoolParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    float_avg_pool::validate(&p.window, x, y)?;
    let area = usize::from(p.window.kernel_h) * usize::from(p.window.kernel_w);
    ensure(
        area <= MAX_WINDOW_AREA,
        "int8 average pool window is larger than 2^23 cells",
    )
}

/// `y` = the sum over each window divided by the cell count, rounded half away from zero (TFLM:
/// `(sum +- count / 2) / count`), clamped to `act_min..=act_max`.
pub fn avg_pool(p: &QuantAvgPoolParams, x: In<'_, i8>, y: Out<'_, i8>) {
    let full_window = usize::from(p.window.kernel_h) * usize::from(p.window.kernel_w);
    let include_pad = p.window.count_include_pad;
    let (zero_point, act_min, act_max) = (i32::from(p.zero_point), p.act_min, p.act_max);
    pool2d(
        &p.window,
        x,
        y,
        0,
        |acc, v| acc + i32::from(v),
        |mut acc, valid_cells| {
            let count = if include_pad {
                // Padding cells hold the zero point. Both counts are at most 2^23.
                acc += (full_window - valid_cells) as i32 * zero_point;
                full_window as i32
            } else {
                valid_cells as i32
            };
            let mean = if acc > 0 {
                (acc + count / 2) / count
            } else {
                (acc - count / 2) / count
            };
            clamp_to_i8(mean, act_min, act_max)
        },
    );
}

/// Signature of an int8 average pool.
pub type QuantAvgPoolFn = fn(&QuantAvgPoolParams, In<'_, i8>, Out<'_, i8>);

op_entry! {
    /// The [`Kernels::quant_avg_pool`](crate::Kernels::quant_avg_pool) entry, which runs
    /// [`OpKind::QuantAvgPool2d`](crate::OpKind::QuantAvgPool2d).
    QuantAvgPool: QuantAvgPoolFn = avg_pool, QuantAvgPoolParams, Int8[I8] -> I8;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
