//! Requantize: int8 to int8 with another scale and zero point (TFLM's int8 `Quantize` from an int8
//! input), as where Concat's inputs are quantized differently from its output.

pub use crate::schema::RequantizeParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::quant::requant::{
    check_multiplier, offset_and_clamp, quantize_multiplier, MAX_SHIFT, MIN_SHIFT,
};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::schema::RequantRounding;
use crate::Error;

impl RequantizeParams {
    /// The parameters for an input quantized as `x` and an output as `y` (`(scale, zero_point)`;
    /// converter side).
    pub fn from_scales(x: (f32, i8), y: (f32, i8)) -> Self {
        let (multiplier, shift) = quantize_multiplier(f64::from(x.0) / f64::from(y.0));
        RequantizeParams {
            x_zero_point: x.1,
            y_zero_point: y.1,
            multiplier,
            shift,
            rounding: RequantRounding::Double,
        }
    }
}

/// Checks that `y` has the shape of `x`, and the multiplier (non-negative, shift in `-31..=30`).
pub fn validate(p: &RequantizeParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(x == y, "requantize output shape differs from input")?;
    check_multiplier(
        p.multiplier,
        p.shift,
        MIN_SHIFT,
        MAX_SHIFT,
        "requantize multiplier is negative or its shift is outside -31..=30",
    )
}

/// `y = clamp(requant(x - x_zero_point) + y_zero_point, -128, 127)`.
pub fn requantize(p: &RequantizeParams, x: In<'_, i8>, y: Out<'_, i8>) {
    for (out, &v) in y.data.iter_mut().zip(x.data) {
        let centered = i32::from(v) - i32::from(p.x_zero_point);
        let scaled = p.rounding.scale(centered, p.multiplier, p.shift);
        *out = offset_and_clamp(scaled, p.y_zero_point, i8::MIN, i8::MAX);
    }
}

/// Signature of a requantize kernel.
pub type RequantizeFn = fn(&RequantizeParams, In<'_, i8>, Out<'_, i8>);

op_entry! {
    /// The [`Kernels::requantize`](crate::Kernels::requantize) entry, which runs
    /// [`OpKind::Requantize`](crate::OpKind::Requantize).
    Requantize: RequantizeFn = requantize, RequantizeParams, Int8[I8] -> I8;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
