//! int8 softmax along one axis, int8 in and int8 out (TFLM's reference int8 `Softmax`): the output is
//! quantized with scale 1/256 and zero point -128. Everything is fixed point (gemmlowp's): the input
//! differences from the lane maximum are scaled to Q5.26, exponentiated with `exp_on_negative_values`,
//! summed in Q12.19, and the sum inverted by Newton-Raphson.

pub use crate::schema::QuantSoftmaxParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::nn::softmax::for_each_lane;
use crate::ops::quant::requant::saturating_rounding_doubling_high_mul as q31_mul;
use crate::ops::quant::requant::{quantize_multiplier, rounding_divide_by_pot as divide_by_pot};
use crate::ops::shape::{dims_fit, require, same_dims, shape_error, Checked};
use crate::ops::{In, Out};
use crate::Error;

/// Integer bits of the scaled input differences (Q5.26).
const SCALED_DIFF_INTEGER_BITS: i32 = 5;
/// Integer bits of the sum of exponentials (Q12.19).
pub const ACCUMULATION_INTEGER_BITS: i32 = 12;
/// Longest axis whose sum of exponentials (each at most 1, in Q12.19) cannot overflow int32.
pub const MAX_AXIS_LEN: usize = (1 << ACCUMULATION_INTEGER_BITS) - 1;

impl QuantSoftmaxParams {
    /// The parameters TFLM's `Prepare` computes (in f64) for `softmax(beta * x)` over `axis`, with `x`
    /// quantized with `x_scale` (converter side; `PreprocessSoftmaxScaling` and `CalculateInputRadius`).
    pub fn from_scale(beta: f64, x_scale: f64, axis: u8) -> Self {
        let scaled_one = libm::scalbn(1.0, 31 - SCALED_DIFF_INTEGER_BITS);
        let real = (beta * x_scale * scaled_one).min(2_147_483_647.0);
        let (input_multiplier, input_left_shift) = quantize_multiplier(real);
        // The largest difference whose rescaled value still fits in Q5.26.
        let max_integer = f64::from((1 << SCALED_DIFF_INTEGER_BITS) - 1);
        let radius = libm::floor(libm::scalbn(max_integer * scaled_one, -input_left_shift));
        QuantSoftmaxParams {
            axis,
            input_multiplier,
            input_left_shift,
            diff_min: -(radius as i32),
        }
    }
}

/// Checks `axis < rank`, `y` the shape of `x`, the axis at most [`MAX_AXIS_LEN`] long, a non-negative
/// multiplier, `input_left_shift` in `0..=31`, `diff_min <= 0`, and that the differences used (`diff_min`
/// up to 0, and never below -255) shifted left by `input_left_shift` fit in int32.
pub fn validate(p: &QuantSoftmaxParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check(p, x, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(p: &QuantSoftmaxParams, x: &[usize], y: &[usize]) -> Checked {
    dims_fit(x)?;
    let axis = usize::from(p.axis);
    require(axis < x.len(), "softmax axis is not below the rank")?;
    require(same_dims(x, y), "softmax output shape differs from input")?;
    require(
        x[axis] <= MAX_AXIS_LEN,
        "int8 softmax axis is longer than 4095",
    )?;
    require(
        p.input_multiplier >= 0 && (0..=31).contains(&p.input_left_shift),
        "int8 softmax multiplier is negative or its left shift is outside 0..=31",
    )?;
    require(p.diff_min <= 0, "int8 softmax diff_min is positive")?;
    let lowest = i64::from(p.diff_min.max(-255)) << p.input_left_shift;
    require(
        lowest >= i64::from(i32::MIN),
        "int8 softmax diff_min shifted by input_left_shift overflows int32",
    )
}

/// The exponential term of every difference from the lane maximum, `-255..=0` (at index
/// `difference + 255`), in Q0.31: `exp_on_negative_values` of the scaled difference, or 0 below
/// `diff_min` (a difference whose output is -128 and which adds nothing to the sum, like an exponential
/// of 0). For targets that compute the lanes elsewhere (the GPU) and need the same bits.
pub fn exp_table(p: &QuantSoftmaxParams) -> [i32; 256] {
    let mut table = [0; 256];
    for (i, e) in table.iter_mut().enumerate() {
        let d = i as i32 - 255;
        if d >= p.diff_min {
            *e = exp_on_negative_values(scale_diff(p, d));
        }
    }
    table
}

/// `y = clamp(round(256 * softmax(x)) - 128)` along `axis`, by TFLM's fixed-point algorithm.
///
/// Lane by lane ([`nn::softmax`](crate::ops::nn::softmax)'s lanes, contiguous when the axis is the last
/// one, TFLM's only case).
pub fn softmax(p: &QuantSoftmaxParams, x: In<'_, i8>, y: Out<'_, i8>) {
    for_each_lane(p.axis, x, y, |x_block, y_block, lane, inner, len| {
        // Element `j` of the lane is at `lane + j * inner` (indexed: a step-by iterator per loop
        // costs flash, and this runs once per lane).
        let at = |j: usize| lane + j * inner;
        // In bounds (`at(j) < block`); `get` keeps a panic path out of the binary.
        let x_at = |j: usize| x_block.get(at(j)).copied().unwrap_or(i8::MIN);
        let max = (0..len).fold(i8::MIN, |m, j| m.max(x_at(j)));
        let diff = |v: i8| i32::from(v) - i32::from(max);
        let mut sum: i32 = 0;
        for j in 0..len {
            let d = diff(x_at(j));
            if d >= p.diff_min {
                let e = exp_on_negative_values(scale_diff(p, d));
                sum = sum.wrapping_add(rounding_divide_by_pot(e, ACCUMULATION_INTEGER_BITS));
            }
        }
        let (reciprocal, bits_over_unit) = reciprocal(sum, ACCUMULATION_INTEGER_BITS);
        for j in 0..len {
            let d = diff(x_at(j));
            let Some(out) = y_block.get_mut(at(j)) else {
                break;
            };
            *out = if d >= p.diff_min {
                let e = exp_on_negative_values(scale_diff(p, d));
                // Q0.31 probability, shifted to 8 fractional bits: 256 * p.
                let scaled =
                    rounding_divide_by_pot(mul_q31(reciprocal, e), bits_over_unit + 31 - 8);
                scaled
                    .wrapping_add(i8::MIN.into())
                    .clamp(i8::MIN.into(), i8::MAX.into()) as i8
            } else {
                i8::MIN
            };
        }
    })
}

/// A difference from the maximum (`<= 0`) scaled by `beta * x_scale` into Q5.26
/// (TFLite's `MultiplyByQuantizedMultiplierGreaterThanOne`).
/// The fixed-point product, out of line: softmax calls it some thirty times per element, and inlined
/// copies would cost more flash than the calls cost time (softmax is a small share of a model's work).
#[inline(never)]
fn mul_q31(a: i32, b: i32) -> i32 {
    q31_mul(a, b)
}

/// [`rounding_divide_by_pot`](divide_by_pot), out of line for the same reason.
#[inline(never)]
fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    divide_by_pot(x, exponent)
}

#[inline(always)]
fn scale_diff(p: &QuantSoftmaxParams, diff: i32) -> i32 {
    let shifted = diff.wrapping_mul(1i32.wrapping_shl(p.input_left_shift.clamp(0, 31) as u32));
    mul_q31(shifted, p.input_multiplier)
}

/// `x * 2^exponent`, saturated to int32 (gemmlowp's `SaturatingRoundingMultiplyByPOT` for a positive
/// exponent).
#[inline(always)]
fn saturating_shl(x: i32, exponent: u32) -> i32 {
    (i64::from(x) << exponent).clamp(i32::MIN.into(), i32::MAX.into()) as i32
}

/// `exp(a)` for `a` in `[-1/4, 0)`, Q0.31 in and out: a degree-4 Taylor expansion around -1/8
/// (gemmlowp's `exp_on_interval_between_negative_one_quarter_and_0_excl`).
fn exp_on_quarter_interval(a: i32) -> i32 {
    const EXP_MINUS_ONE_EIGHTH: i32 = 1_895_147_668;
    const ONE_THIRD: i32 = 715_827_883;
    let x = a.wrapping_add(1 << 28); // a + 1/8
    let x2 = mul_q31(x, x);
    let x3 = mul_q31(x2, x);
    let x4 = mul_q31(x2, x2);
    let x4_over_4 = rounding_divide_by_pot(x4, 2);
    // x^4/24 + x^3/6 + x^2/2
    let poly = rounding_divide_by_pot(
        mul_q31(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2),
        1,
    );
    EXP_MINUS_ONE_EIGHTH.wrapping_add(mul_q31(EXP_MINUS_ONE_EIGHTH, x.wrapping_add(poly)))
}

/// `exp(a)` for `a <= 0`, Q5.26 in, Q0.31 out (gemmlowp's `exp_on_negative_values`): `a` is split into a
/// part in `[-1/4, 0)`, exponentiated by [`exp_on_quarter_interval`], and multiples of powers of two from
/// 1/4 to 16, whose exponentials are constants multiplied in one by one.
fn exp_on_negative_values(a: i32) -> i32 {
    const FRACTIONAL_BITS: i32 = 31 - SCALED_DIFF_INTEGER_BITS;
    const ONE_QUARTER: i32 = 1 << (FRACTIONAL_BITS - 2);
    /// `(k, exp(-2^k))` in Q0.31, for the bits of `-a` from 1/4 to 16.
    const BARREL: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    if a == 0 {
        return i32::MAX; // exactly 1
    }
    let mod_quarter_minus_quarter = (a & (ONE_QUARTER - 1)) - ONE_QUARTER;
    let mut result = exp_on_quarter_interval(saturating_shl(
        mod_quarter_minus_quarter,
        SCALED_DIFF_INTEGER_BITS as u32,
    ));
    let remainder = mod_quarter_minus_quarter.wrapping_sub(a);
    for (k, exp_minus_pow2) in BARREL {
        if remainder & (1 << (FRACTIONAL_BITS + k)) != 0 {
            result = mul_q31(result, exp_minus_pow2);
        }
    }
    result
}

/// `(a + b) / 2` rounded half away from zero, without overflow (gemmlowp's `RoundingHalfSum`).
fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = i64::from(a) + i64::from(b);
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

/// `1 / (1 + a)` for `a` in `[0, 1)`, Q0.31 in and out, by three Newton-Raphson steps from the
/// `48/17 - 32/17 d` estimate (gemmlowp's `one_over_one_plus_x_for_x_in_0_1`); intermediates in Q2.29.
fn one_over_one_plus_x(a: i32) -> i32 {
    const FORTY_EIGHT_OVER_17: i32 = 1_515_870_810;
    const MINUS_THIRTY_TWO_OVER_17: i32 = -1_010_580_540;
    const ONE_Q2_29: i32 = 1 << 29;
    let half_denominator = rounding_half_sum(a, i32::MAX);
    let mut x =
        FORTY_EIGHT_OVER_17.wrapping_add(mul_q31(half_denominator, MINUS_THIRTY_TWO_OVER_17));
    for _ in 0..3 {
        let one_minus_half_denominator_times_x =
            ONE_Q2_29.wrapping_sub(mul_q31(half_denominator, x));
        // Q2.29 * Q2.29 is Q4.27; back to Q2.29.
        x = x.wrapping_add(saturating_shl(
            mul_q31(x, one_minus_half_denominator_times_x),
            2,
        ));
    }
    // x / 2 in Q1.30 has the raw value of x; back to Q0.31.
    saturating_shl(x, 1)
}

/// `(r, bits_over_unit)` with `1 / x ~= r * 2^-bits_over_unit` (`r` in Q0.31), for `x > 0` with
/// `integer_digits` integer bits (TFLite's `GetReciprocal`).
fn reciprocal(x: i32, integer_digits: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros();
    let bits_over_unit = integer_digits - headroom_plus_one as i32;
    // x normalized to [1, 2), minus 1, as Q0.31 (x = 0 cannot come from a lane; it gives 0 here).
    let normalized = (x as u32).checked_shl(headroom_plus_one).unwrap_or(0);
    let shifted_sum_minus_one = normalized.wrapping_sub(1 << 31) as i32;
    (one_over_one_plus_x(shifted_sum_minus_one), bits_over_unit)
}

/// Signature of an int8 softmax.
pub type QuantSoftmaxFn = fn(&QuantSoftmaxParams, In<'_, i8>, Out<'_, i8>);

op_entry! {
    /// The [`Kernels::quant_softmax`](crate::Kernels::quant_softmax) entry, which runs
    /// [`OpKind::QuantSoftmax`](crate::OpKind::QuantSoftmax).
    QuantSoftmax: QuantSoftmaxFn = softmax, QuantSoftmaxParams, Int8[I8] -> I8;
    validate |p, o| check(p, o.dims(0), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q31(v: f64) -> i32 {
        (v * 2_147_483_648.0).round().min(2_147_483_647.0) as i32
    }

    #[test]
    fn exp_on_negative_values_is_close_to_exp() {
        for i in 0..=3200 {
            let a = -f64::from(i) / 100.0;
            let raw = (a * f64::from(1 << 26)) as i32;
            let got = f64::from(exp_on_negative_values(raw)) / 2_147_483_648.0;
            assert!((got - a.exp()).abs() < 1e-6, "exp({a}): {got}");
        }
    }

    #[test]
    fn one_over_one_plus_x_is_close_to_reciprocal() {
        for i in 0..1000 {
            let a = f64::from(i) / 1000.0;
            let got = f64::from(one_over_one_plus_x(q31(a))) / 2_147_483_648.0;
            assert!((got - 1.0 / (1.0 + a)).abs() < 1e-8, "1/(1+{a}): {got}");
        }
    }
}
