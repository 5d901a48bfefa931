//! int8 addition with numpy broadcasting (TFLM's int8 `Add`): both inputs are brought to a common scale
//! with extra precision (`left_shift` bits), added, and the sum requantized to the output.

pub use crate::schema::QuantAddParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::quant::requant::{
    check_multiplier, offset_and_clamp, quantize_multiplier, MIN_SHIFT,
};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims, ensure};
use crate::ops::{In, Out};
use crate::schema::RequantRounding;
use crate::Error;

/// The `left_shift` TFLite uses for int8 Add.
pub const INT8_LEFT_SHIFT: i32 = 20;

/// Largest `left_shift` for which `(x - zero_point) << left_shift`, and the sum of two such values scaled
/// by multipliers below 1, fit in int32.
pub const MAX_LEFT_SHIFT: i32 = 22;

impl QuantAddParams {
    /// The parameters TFLM's `Prepare` computes (in f64, `left_shift` 20) for inputs and output quantized
    /// with these `(scale, zero_point)`s. A converter-side helper; `validate` rejects the result when the
    /// output scale is too small for the inputs' (below `max(a_scale, b_scale) / 2^19`).
    pub fn from_scales(a: (f32, i8), b: (f32, i8), y: (f32, i8), act_min: i8, act_max: i8) -> Self {
        let ((a_scale, a_zero_point), (b_scale, b_zero_point), (y_scale, y_zero_point)) = (a, b, y);
        let twice_max = 2.0 * f64::from(a_scale.max(b_scale));
        let (a_multiplier, a_shift) = quantize_multiplier(f64::from(a_scale) / twice_max);
        let (b_multiplier, b_shift) = quantize_multiplier(f64::from(b_scale) / twice_max);
        let (y_multiplier, y_shift) = quantize_multiplier(
            twice_max / (f64::from(1u32 << INT8_LEFT_SHIFT) * f64::from(y_scale)),
        );
        QuantAddParams {
            a_zero_point,
            b_zero_point,
            y_zero_point,
            left_shift: INT8_LEFT_SHIFT,
            a_multiplier,
            a_shift,
            b_multiplier,
            b_shift,
            y_multiplier,
            y_shift,
            act_min,
            act_max,
            rounding: RequantRounding::Double,
        }
    }
}

/// Checks that `a` and `b` broadcast (numpy rules) to exactly `y`, `left_shift` in
/// `0..=`[`MAX_LEFT_SHIFT`], and every multiplier non-negative with a shift in `-31..=0` (below 1).
pub fn validate(p: &QuantAddParams, a: &[usize], b: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(a)?;
    check_dims(b)?;
    check_dims(y)?;
    check_broadcast(a, b, y)?;
    ensure(
        (0..=MAX_LEFT_SHIFT).contains(&p.left_shift),
        "int8 add left_shift is outside 0..=22",
    )?;
    let reason = "int8 add multiplier is negative or not below 1 (shift outside -31..=0)";
    check_multiplier(p.a_multiplier, p.a_shift, MIN_SHIFT, 0, reason)?;
    check_multiplier(p.b_multiplier, p.b_shift, MIN_SHIFT, 0, reason)?;
    check_multiplier(p.y_multiplier, p.y_shift, MIN_SHIFT, 0, reason)
}

/// `y = clamp(requant(scale_a(a - a_zp) + scale_b(b - b_zp)) + y_zp)` with broadcasting, as TFLM:
/// each input, offset and shifted left by `left_shift`, is scaled by its multiplier; the sum is scaled by
/// the output multiplier.
pub fn add(p: &QuantAddParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    let p = *p;
    let unit = 1i32.wrapping_shl(p.left_shift.clamp(0, 31) as u32);
    broadcast_zip(a, b, y, move |u, v| {
        let u = (i32::from(u) - i32::from(p.a_zero_point)).wrapping_mul(unit);
        let v = (i32::from(v) - i32::from(p.b_zero_point)).wrapping_mul(unit);
        let u = p.rounding.scale(u, p.a_multiplier, p.a_shift);
        let v = p.rounding.scale(v, p.b_multiplier, p.b_shift);
        let sum = p
            .rounding
            .scale(u.wrapping_add(v), p.y_multiplier, p.y_shift);
        offset_and_clamp(sum, p.y_zero_point, p.act_min, p.act_max)
    });
}

/// Signature of an int8 add.
pub type QuantAddFn = fn(&QuantAddParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);

op_entry! {
    /// The [`Kernels::quant_add`](crate::Kernels::quant_add) entry, which runs
    /// [`OpKind::QuantAdd`](crate::OpKind::QuantAdd).
    QuantAdd: QuantAddFn = add, QuantAddParams, Int8[I8, I8] -> I8;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.dims(1), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, out(a.y)?);
}
