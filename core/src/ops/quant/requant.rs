//! Fixed-point requantization as the TFLite int8 spec does it: a real multiplier `M` is stored as a Q31
//! `multiplier` in `[2^30, 2^31)` and a power-of-two `shift`, `M ~= multiplier * 2^(shift - 31)`, and an
//! int32 value is scaled by it in one of two [`RequantRounding`] modes: TFLite's default, a saturating rounding
//! doubling high multiply followed by a rounding right shift (two roundings, exactly as TFLM's reference
//! `MultiplyByQuantizedMultiplier`), or a single rounding of the exact product (TFLite built with
//! `TFLITE_SINGLE_ROUNDING`), which is what onnxruntime's float requantization computes.
//!
//! [`quantize_multiplier`] and [`activation_range`] are converter-side helpers (pure math, no `std`); the
//! device only runs [`multiply_by_quantized_multiplier`] and friends, never float.

pub use crate::schema::RequantRounding;

use crate::ops::entry::Operands;
use crate::ops::shape::{ensure, require, shape_error, Checked};
use crate::schema::Activation;
use crate::Error;

impl RequantRounding {
    /// `x * multiplier * 2^(shift - 31)`, rounded in this mode.
    #[inline(always)]
    pub fn scale(self, x: i32, multiplier: i32, shift: i32) -> i32 {
        match self {
            RequantRounding::Double => multiply_by_quantized_multiplier(x, multiplier, shift),
            RequantRounding::Single => {
                multiply_by_quantized_multiplier_single(x, multiplier, shift)
            }
        }
    }
}

/// Smallest `shift` a multiplier may have (`M >= 2^-32`; smaller multipliers are stored as 0).
pub const MIN_SHIFT: i32 = -31;
/// Largest `shift` a multiplier may have (`M < 2^30`).
pub const MAX_SHIFT: i32 = 30;

/// `round(a * b / 2^31)` with ties toward +infinity, saturating the one overflowing case
/// (`i32::MIN * i32::MIN`) to `i32::MAX` (gemmlowp's `SaturatingRoundingDoublingHighMul`).
#[inline]
pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    let ab = i64::from(a) * i64::from(b);
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // |ab| < 2^62 here, so `ab + nudge` does not overflow and the quotient fits in i32.
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// `round(x / 2^exponent)` with ties away from zero (gemmlowp's `RoundingDivideByPOT`).
///
/// gemmlowp defines it for `exponent` in `0..=31`; this function gives the same results there, and extends
/// it exactly (still rounding half away from zero) to larger exponents. Negative exponents count as 0 and
/// exponents above 62 as 62, so it never panics.
#[inline]
pub fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    let exponent = exponent.clamp(0, 62);
    let x = i64::from(x);
    let mask = (1i64 << exponent) - 1;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i64::from(x < 0);
    // The quotient lies between x and 0 and the +1 only rounds toward x, so the result fits in i32.
    ((x >> exponent) + i64::from(remainder > threshold)) as i32
}

/// `x * M` rounded, where `M = multiplier * 2^(shift - 31)` (TFLite's `MultiplyByQuantizedMultiplier`):
/// `x` is first shifted left by `max(shift, 0)`, multiplied with
/// [`saturating_rounding_doubling_high_mul`], then shifted right by `max(-shift, 0)` with
/// [`rounding_divide_by_pot`].
///
/// Valid multipliers have `shift` in [`MIN_SHIFT`]`..=`[`MAX_SHIFT`] (what `validate` checks). Outside that
/// range the function still never panics: shifts are clamped to `-62..=31`. The left shift wraps on
/// overflow, as the C `x * (1 << left_shift)` does on every target TFLM runs on.
#[inline]
pub fn multiply_by_quantized_multiplier(x: i32, multiplier: i32, shift: i32) -> i32 {
    let shift = shift.clamp(-62, 31);
    let left = shift.max(0);
    let right = (-shift).max(0);
    let shifted = x.wrapping_mul(1i32.wrapping_shl(left as u32));
    rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(shifted, multiplier),
        right,
    )
}

/// `round(x * multiplier / 2^(31 - shift))` with one rounding, ties toward +infinity, saturated to i32
/// (TFLite's `MultiplyByQuantizedMultiplier` built with `TFLITE_SINGLE_ROUNDING`).
///
/// Valid multipliers have `shift` in [`MIN_SHIFT`]`..=`[`MAX_SHIFT`]; outside it the shift is clamped to
/// that range, so the function never panics.
#[inline]
pub fn multiply_by_quantized_multiplier_single(x: i32, multiplier: i32, shift: i32) -> i32 {
    let total_shift = 31 - shift.clamp(MIN_SHIFT, MAX_SHIFT);
    // |x * multiplier| <= 2^62 and the nudge is at most 2^61, so the sum fits in i64.
    let product = i64::from(x) * i64::from(multiplier) + (1i64 << (total_shift - 1));
    (product >> total_shift).clamp(i32::MIN.into(), i32::MAX.into()) as i32
}

/// `(multiplier, shift)` with `real ~= multiplier * 2^(shift - 31)` and `|multiplier|` in `[2^30, 2^31)`
/// (TFLite's `QuantizeMultiplier`): the mantissa of `real` rounded half away from zero to Q31.
///
/// Zero, non-finite values and multipliers below `2^-32` (shift below [`MIN_SHIFT`]) give `(0, 0)`.
/// Multipliers of `2^30` and above give a shift above [`MAX_SHIFT`], which `validate` rejects.
pub fn quantize_multiplier(real: f64) -> (i32, i32) {
    if real == 0.0 || !real.is_finite() {
        return (0, 0);
    }
    let (mantissa, mut shift) = frexp(real);
    // |mantissa| in [0.5, 1): the product is exact and rounds to at most 2^31 in magnitude.
    let mut q = libm::round(mantissa * TWO_POW_31) as i64;
    if q == 1i64 << 31 {
        q /= 2;
        shift += 1;
    }
    if shift < MIN_SHIFT {
        return (0, 0);
    }
    // q is in [-2^31, 2^31), so it fits.
    (q as i32, shift)
}

const TWO_POW_31: f64 = 2_147_483_648.0;

/// `(multiplier, shift)` of one output channel of a Conv2d or FullyConnected: the real multiplier
/// `x_scale * w_scale / y_scale` computed in f64 from the f32 scales, in that order, then
/// [`quantize_multiplier`]. This is TFLM's derivation (`PopulateConvolutionQuantizationParams`), so the
/// rows the converter writes give TFLM's results bit for bit.
pub fn channel_multiplier(x_scale: f32, w_scale: f32, y_scale: f32) -> (i32, i32) {
    quantize_multiplier(f64::from(x_scale) * f64::from(w_scale) / f64::from(y_scale))
}

/// `(m, e)` with `x = m * 2^e` and `|m|` in `[0.5, 1)` (C's `frexp`), for finite non-zero `x`.
fn frexp(x: f64) -> (f64, i32) {
    const EXP_MASK: u64 = 0x7ff << 52;
    let bits = x.to_bits();
    let biased = ((bits & EXP_MASK) >> 52) as i32;
    if biased == 0 {
        // Subnormal: scale into the normal range first (2^54 is exact).
        let (m, e) = frexp(x * 18_014_398_509_481_984.0);
        return (m, e - 54);
    }
    // Keep sign and fraction, set the exponent so that the value is in [0.5, 1).
    let m = f64::from_bits((bits & !EXP_MASK) | (1022 << 52));
    (m, biased - 1022)
}

/// The int8 clamp bounds `(act_min, act_max)` of a fused activation for an output quantized with
/// `scale` and `zero_point` (TFLite's `CalculateActivationRangeQuantized`): `Relu` clamps below at the
/// quantized 0, `Relu6` also above at the quantized 6, `Clip` at its quantized bounds. A bound is
/// quantized as `zero_point + round(bound / scale)` (f32 division, ties away from zero), then
/// saturated to int8.
pub fn activation_range(act: Activation, scale: f32, zero_point: i8) -> (i8, i8) {
    let quantize = |v: f32| {
        let q = libm::roundf(v / scale) as i32; // `as` saturates (and maps NaN to 0)
        q.saturating_add(i32::from(zero_point))
            .clamp(i8::MIN.into(), i8::MAX.into()) as i8
    };
    match act {
        Activation::None => (i8::MIN, i8::MAX),
        Activation::Relu => (quantize(0.0), i8::MAX),
        Activation::Relu6 => (quantize(0.0), quantize(6.0)),
        Activation::Clip { min, max } => (quantize(min), quantize(max)),
    }
}

/// `min(max(v, act_min), act_max)` as int8: the lower bound first, as TFLite does (so `act_min > act_max`
/// gives `act_max`, like ONNX `Clip`).
#[inline(always)]
pub fn clamp_to_i8(v: i32, act_min: i8, act_max: i8) -> i8 {
    let lower = v.max(act_min.into());
    // Both bounds are int8, so the result is too.
    lower.min(act_max.into()) as i8
}

/// `v + zero_point` (saturating) clamped to `act_min..=act_max` as int8 ([`clamp_to_i8`]): how every int8
/// op turns its scaled result into its output value.
#[inline(always)]
pub fn offset_and_clamp(v: i32, zero_point: i8, act_min: i8, act_max: i8) -> i8 {
    clamp_to_i8(v.saturating_add(zero_point.into()), act_min, act_max)
}

/// The output stage of Conv2d and FullyConnected: scale the int32 accumulator by output channel
/// `channel`'s `(multiplier, shift)` row of `requant` (a validated `[OC, 2]` or `[1, 2]` tensor) in
/// `rounding` mode, add the output zero point (saturating), clamp to `act_min..=act_max`. Targets with
/// their own accumulation loops (`ember-cortex-m`) share it, so every target rounds alike. Out of line:
/// one call per output value costs a few percent of a convolution's time, and each inlined copy costs
/// flash (some 400 bytes per kernel path).
#[inline(never)]
pub fn requantize_acc(
    acc: i32,
    requant: &[i32],
    channel: usize,
    rounding: RequantRounding,
    y_zero_point: i8,
    act_min: i8,
    act_max: i8,
) -> i8 {
    let (multiplier, shift) = channel_row(requant, channel);
    let scaled = rounding.scale(acc, multiplier, shift);
    offset_and_clamp(scaled, y_zero_point, act_min, act_max)
}

/// The output stage of an int8 convolution or fully connected layer, as one value: add output
/// channel `channel`'s bias to the int32 accumulator (wrapping), then [`requantize_acc`] it. The
/// reference kernels and the targets' (`ember-cortex-m`) finish every output with it.
#[derive(Clone, Copy, Debug)]
pub struct OutputStage<'a> {
    /// The int32 bias, `[OC]`, if any.
    pub bias: Option<&'a [i32]>,
    /// The `(multiplier, shift)` rows, `[OC, 2]` or `[1, 2]`.
    pub requant: &'a [i32],
    /// How the accumulator is rounded when it is scaled.
    pub rounding: RequantRounding,
    /// Zero point of the output.
    pub y_zero_point: i8,
    /// Lower clamp of the output.
    pub act_min: i8,
    /// Upper clamp of the output.
    pub act_max: i8,
}

impl OutputStage<'_> {
    /// Output channel `channel`'s int8 value for the accumulator `acc` (without its bias).
    #[inline(always)]
    pub fn finish(&self, acc: i32, channel: usize) -> i8 {
        // Validation keeps the bias in bounds; `get` keeps a panic path out of the binary.
        let acc = match self.bias.and_then(|b| b.get(channel)) {
            Some(&b) => acc.wrapping_add(b),
            None => acc,
        };
        requantize_acc(
            acc,
            self.requant,
            channel,
            self.rounding,
            self.y_zero_point,
            self.act_min,
            self.act_max,
        )
    }
}

/// The [`OutputStage`] of the int8 convolution's and fully connected layer's parameters.
pub trait HasOutputStage {
    /// The output stage with these parameters' rounding, zero point and clamp, over `bias` and
    /// `requant`.
    fn output_stage<'a>(&self, bias: Option<&'a [i32]>, requant: &'a [i32]) -> OutputStage<'a>;
}

/// [`HasOutputStage`] for parameter structs with the int8 output fields.
macro_rules! has_output_stage {
    ($($params:ty),*) => {$(
        impl HasOutputStage for $params {
            #[inline(always)]
            fn output_stage<'a>(&self, bias: Option<&'a [i32]>, requant: &'a [i32]) -> OutputStage<'a> {
                OutputStage {
                    bias,
                    requant,
                    rounding: self.rounding,
                    y_zero_point: self.y_zero_point,
                    act_min: self.act_min,
                    act_max: self.act_max,
                }
            }
        }
    )*};
}

has_output_stage!(
    crate::schema::QuantConv2dParams,
    crate::schema::QuantFullyConnectedParams
);

/// Checks one multiplier: `multiplier >= 0` and `shift` in `min_shift..=max_shift`.
pub(crate) fn check_multiplier(
    multiplier: i32,
    shift: i32,
    min_shift: i32,
    max_shift: i32,
    reason: &'static str,
) -> Result<(), Error> {
    ensure(
        multiplier >= 0 && (min_shift..=max_shift).contains(&shift),
        reason,
    )
}

/// Checks the dims of a per-channel requantization tensor: `[channels, 2]` (one `(multiplier, shift)`
/// row per output channel) or `[1, 2]` (one row for every channel, per-tensor).
pub(crate) fn check_per_channel_dims(dims: &[usize], channels: usize) -> Checked {
    require(
        dims.len() == 2 && dims[1] == 2 && (dims[0] == channels || dims[0] == 1),
        "requantization tensor is not [OC, 2] or [1, 2]",
    )
}

/// Checks the values of a per-channel requantization tensor (rows of `(multiplier, shift)`, flattened):
/// every multiplier non-negative and every shift in [`MIN_SHIFT`]`..=`[`MAX_SHIFT`]. The blob validator runs it
/// on the constant tensor; kernels do not rely on it to be safe, only to be meaningful.
pub fn check_per_channel(requant: &[i32]) -> Result<(), Error> {
    check_rows(requant).map_err(shape_error)
}

/// [`check_per_channel`] as a [`Checked`].
pub(crate) fn check_rows(requant: &[i32]) -> Checked {
    require(
        requant.len().is_multiple_of(2),
        "requantization tensor has an odd length",
    )?;
    for row in requant.chunks_exact(2) {
        require(
            row[0] >= 0 && (MIN_SHIFT..=MAX_SHIFT).contains(&row[1]),
            "requantization multiplier is negative or its shift is outside -31..=30",
        )?;
    }
    Ok(())
}

/// The requantization input (input 2) of an int8 convolution or fully connected op: an I32 weight
/// tensor whose `(multiplier, shift)` rows are checked here once (see [`check_per_channel`]), so that
/// the kernels can trust them. Out of line: both ops share it.
#[inline(never)]
pub(crate) fn check_requant_input(o: &impl Operands) -> Checked {
    let requant: &[i32] = o.weight_values(
        2,
        [
            "requantization tensor must be a weight tensor",
            "requantization tensor runs past the weights section",
            "requantization tensor is not i32-aligned",
        ],
    )?;
    check_rows(requant)
}

/// The `(multiplier, shift)` row of output channel `channel` in a validated `[OC, 2]` or `[1, 2]` tensor.
#[inline(always)]
pub(crate) fn channel_row(requant: &[i32], channel: usize) -> (i32, i32) {
    let row = if requant.len() == 2 { 0 } else { channel * 2 };
    // Validation keeps the row in bounds; `get` keeps a panic path out of the binary.
    match requant.get(row..row + 2) {
        Some(&[multiplier, shift]) => (multiplier, shift),
        _ => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_matches_definition() {
        for x in [
            1.0,
            0.5,
            0.75,
            3.0,
            -6.5,
            1e-300,
            5e-324,
            1e300,
            f64::MIN_POSITIVE,
        ] {
            let (m, e) = frexp(x);
            assert!((0.5..1.0).contains(&m.abs()), "{x}: {m}");
            assert_eq!(m * libm::exp2(f64::from(e)), x, "{x}");
        }
    }

    /// Single rounding is `round(x * M)` with ties up, checked against exact rational arithmetic in i128.
    #[test]
    fn single_rounding_is_one_rounding_of_the_exact_product() {
        let cases = [
            (0, 1 << 30, 0),
            (1, 1 << 30, 0),   // 0.5: a tie, up to 1
            (-1, 1 << 30, 0),  // -0.5: a tie, up to 0
            (3, 1 << 30, -1),  // 0.75 -> 1
            (-3, 1 << 30, -1), // -0.75 -> -1
            (12345, 1_518_500_250, -7),
            (-98765, 2_000_000_000, -20),
            (i32::MAX, i32::MAX, 30),
            (i32::MIN, i32::MAX, 30),
            (i32::MIN, i32::MAX, -31),
        ];
        for (x, m, shift) in cases {
            let num = i128::from(x) * i128::from(m);
            let den = 1i128 << (31 - shift);
            // floor((num + den / 2) / den): round half up, exactly.
            let want = (num + den / 2)
                .div_euclid(den)
                .clamp(i32::MIN.into(), i32::MAX.into());
            assert_eq!(
                i128::from(multiply_by_quantized_multiplier_single(x, m, shift)),
                want,
                "{x} * {m} * 2^({shift} - 31)"
            );
        }
        // -1006 * 1941943902 / 2^33 = -227.43: the first rounding gives -909.71 -> -910, which is a
        // tie (-227.5) for the second.
        assert_eq!(
            RequantRounding::Single.scale(-1006, 1_941_943_902, -2),
            -227
        );
        assert_eq!(
            RequantRounding::Double.scale(-1006, 1_941_943_902, -2),
            -228
        );
    }

    #[test]
    fn quantize_multiplier_known_answers() {
        assert_eq!(quantize_multiplier(0.5), (1 << 30, 0));
        assert_eq!(quantize_multiplier(1.0), (1 << 30, 1));
        assert_eq!(quantize_multiplier(0.25), (1 << 30, -1));
        // 2^31 - 2^-22 rounds up to 2^31: renormalized.
        assert_eq!(quantize_multiplier(1.0 - 1e-12), (1 << 30, 1));
        assert_eq!(quantize_multiplier(0.0), (0, 0));
        assert_eq!(quantize_multiplier(1e-20), (0, 0));
        assert_eq!(quantize_multiplier(f64::NAN), (0, 0));
    }
}
