//! int8 multiplication with numpy broadcasting (TFLM's int8 `Mul`): the product of the offset inputs,
//! requantized to the output.

pub use crate::schema::QuantMulParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::quant::requant::{
    check_multiplier, offset_and_clamp, quantize_multiplier, MAX_SHIFT, MIN_SHIFT,
};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims};
use crate::ops::{In, Out};
use crate::schema::RequantRounding;
use crate::Error;

impl QuantMulParams {
    /// The parameters TFLM's `Prepare` computes (in f64) for these scales and zero points (converter side).
    pub fn from_scales(a: (f32, i8), b: (f32, i8), y: (f32, i8), act_min: i8, act_max: i8) -> Self {
        let real = f64::from(a.0) * f64::from(b.0) / f64::from(y.0);
        let (multiplier, shift) = quantize_multiplier(real);
        QuantMulParams {
            a_zero_point: a.1,
            b_zero_point: b.1,
            y_zero_point: y.1,
            multiplier,
            shift,
            act_min,
            act_max,
            rounding: RequantRounding::Double,
        }
    }
}

/// Checks that `a` and `b` broadcast (numpy rules) to exactly `y`, and the multiplier (non-negative, shift
/// in `-31..=30`).
pub fn validate(p: &QuantMulParams, a: &[usize], b: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(a)?;
    check_dims(b)?;
    check_dims(y)?;
    check_broadcast(a, b, y)?;
    check_multiplier(
        p.multiplier,
        p.shift,
        MIN_SHIFT,
        MAX_SHIFT,
        "int8 mul multiplier is negative or its shift is outside -31..=30",
    )
}

/// `y = clamp(requant((a - a_zp) * (b - b_zp)) + y_zp)` with broadcasting.
pub fn mul(p: &QuantMulParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    let p = *p;
    broadcast_zip(a, b, y, move |u, v| {
        let u = i32::from(u) - i32::from(p.a_zero_point);
        let v = i32::from(v) - i32::from(p.b_zero_point);
        // |u|, |v| <= 255: the product fits.
        let scaled = p.rounding.scale(u * v, p.multiplier, p.shift);
        offset_and_clamp(scaled, p.y_zero_point, p.act_min, p.act_max)
    });
}

/// Signature of an int8 multiply.
pub type QuantMulFn = fn(&QuantMulParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);

op_entry! {
    /// The [`Kernels::quant_mul`](crate::Kernels::quant_mul) entry, which runs
    /// [`OpKind::QuantMul`](crate::OpKind::QuantMul).
    QuantMul: QuantMulFn = mul, QuantMulParams, Int8[I8, I8] -> I8;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.dims(1), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, out(a.y)?);
}
