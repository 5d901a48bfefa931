//! Quantize: f32 to int8 at a graph input (TFLM's `AffineQuantize`; ONNX `QuantizeLinear`).

pub use crate::schema::{QuantizeParams, Rounding};

use crate::ops::entry::{op_entry, out};
use crate::ops::shape::{dims_fit, require, same_dims, shape_error, Checked};
use crate::ops::{In, Out};
use crate::Error;

/// Checks that `y` has the shape of `x` and that the scale is finite and positive.
pub fn validate(p: &QuantizeParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check(p, x, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(p: &QuantizeParams, x: &[usize], y: &[usize]) -> Checked {
    dims_fit(x)?;
    require(same_dims(x, y), "quantize output shape differs from input")?;
    require(
        p.scale.is_finite() && p.scale > 0.0,
        "quantize scale is not finite and positive",
    )
}

/// `y = clamp(round(x / scale) + zero_point, -128, 127)`, the division in f32 as TFLM does it. NaN
/// quantizes to the zero point, infinities to the int8 bounds.
pub fn quantize(p: &QuantizeParams, x: In<'_>, y: Out<'_, i8>) {
    for (out, &v) in y.data.iter_mut().zip(x.data) {
        let q = v / p.scale;
        let rounded = match p.rounding {
            Rounding::HalfAwayFromZero => libm::roundf(q),
            Rounding::HalfToEven => libm::rintf(q),
        };
        // `as` saturates (NaN gives 0), then the zero point is added without overflow.
        let shifted = (rounded as i32).saturating_add(p.zero_point.into());
        *out = shifted.clamp(i8::MIN.into(), i8::MAX.into()) as i8;
    }
}

/// Signature of a quantize kernel.
pub type QuantizeFn = fn(&QuantizeParams, In<'_>, Out<'_, i8>);

op_entry! {
    /// The [`Kernels::quantize`](crate::Kernels::quantize) entry, which runs
    /// [`OpKind::Quantize`](crate::OpKind::Quantize).
    Quantize: QuantizeFn = quantize, QuantizeParams, Int8[F32] -> I8;
    validate |p, o| check(p, o.dims(0), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
