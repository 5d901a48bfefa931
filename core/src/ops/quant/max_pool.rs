//! int8 2-D max pooling, NHWC (TFLM's int8 `MaxPool`): input and output share their quantization.

pub use crate::schema::QuantMaxPoolParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::pool::max_pool as float_max_pool;
use crate::ops::quant::pool::pool2d;
use crate::ops::quant::requant::clamp_to_i8;
use crate::ops::shape::{shape_error, Checked};
use crate::ops::{In, Out};
use crate::Error;

/// The float max pooling's shape rules (see [`pool::max_pool::validate`](float_max_pool::validate)).
pub fn validate(p: &QuantMaxPoolParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check(p, x, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(p: &QuantMaxPoolParams, x: &[usize], y: &[usize]) -> Checked {
    float_max_pool::check(&p.window, x, y)
}

/// `y` = the maximum over each window (padding never wins), clamped to `act_min..=act_max`.
pub fn max_pool(p: &QuantMaxPoolParams, x: In<'_, i8>, y: Out<'_, i8>) {
    let (act_min, act_max) = (p.act_min, p.act_max);
    pool2d(
        &p.window,
        x,
        y,
        i8::MIN.into(),
        |acc, v| acc.max(v.into()),
        |acc, _| clamp_to_i8(acc, act_min, act_max),
    );
}

/// Signature of an int8 max pool.
pub type QuantMaxPoolFn = fn(&QuantMaxPoolParams, In<'_, i8>, Out<'_, i8>);

op_entry! {
    /// The [`Kernels::quant_max_pool`](crate::Kernels::quant_max_pool) entry, which runs
    /// [`OpKind::QuantMaxPool2d`](crate::OpKind::QuantMaxPool2d).
    QuantMaxPool: QuantMaxPoolFn = max_pool, QuantMaxPoolParams, Int8[I8] -> I8;
    validate |p, o| check(p, o.dims(0), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
