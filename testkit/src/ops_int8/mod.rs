//! Conformance suite for int8 (TFLite-spec) kernels.
//!
//! Every kernel of an [`Int8Kernels`] table is checked over proptest-generated shapes, quantization
//! parameters and values in two ways:
//!
//! - against the real-valued op: inputs dequantized in f64, the op computed exactly, the result
//!   requantized with round-half-away-from-zero and clamped. The kernel must be within 1 LSB of it
//!   (exactly equal for max pooling, Quantize and Dequantize);
//! - against TFLite's integer arithmetic, written out here with exact i64/i128 mathematics (int32
//!   accumulation, the two roundings of `MultiplyByQuantizedMultiplier`, TFLM's average rounding): the
//!   kernel must be bit-identical, which is what makes it checkable against TFLM. (Softmax is checked
//!   against the real-valued op only; its fixed-point exponential is TFLM's, bit for bit, by
//!   construction, and against TFLM's own outputs by `tests/tflm/`.)
//!
//! `validate` is tested too: it accepts every generated case and rejects wrong shapes and parameters,
//! and whatever odd case it accepts runs without panicking.
//!
//! The checks are functions taking a `&Int8Kernels`; [`int8_suite!`](crate::int8_suite) instantiates
//! them as `#[test]`s for one table. A target with its own int8 kernels (`ember-cortex-m`'s DSP ones, the
//! SIMD levels of `ember-cpu`) builds its table and runs the same suite to prove bit-identical output.
//! The fixed-point primitives themselves (`ember_core::ops::quant::requant`) are tested once, in
//! `ember-core`'s `tests/requant.rs`, with the definitions written out here.

pub mod conv;
pub mod elementwise;
pub mod pool;
pub mod softmax;
pub mod tflm;

use ember_core::ops::quant as q;
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::{In, Out};
use proptest::prelude::*;

pub use crate::shape::{dim, flat, numel};

/// Signature of an int8 Conv2d kernel (`x, w, bias, requant, y`).
pub type Conv2dFn =
    fn(&q::conv::QuantConv2dParams, In<'_, i8>, In<'_, i8>, Option<&[i32]>, &[i32], Out<'_, i8>);
/// Signature of an int8 FullyConnected kernel (`x, w, bias, requant, y`).
pub type FullyConnectedFn = fn(
    &q::fully_connected::QuantFullyConnectedParams,
    In<'_, i8>,
    In<'_, i8>,
    Option<&[i32]>,
    &[i32],
    Out<'_, i8>,
);
/// Signature of an int8 Add kernel.
pub type AddFn = fn(&q::add::QuantAddParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 Mul kernel.
pub type MulFn = fn(&q::mul::QuantMulParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 average pooling kernel.
pub type AvgPoolFn = fn(&q::avg_pool::QuantAvgPoolParams, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 max pooling kernel.
pub type MaxPoolFn = fn(&q::max_pool::QuantMaxPoolParams, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 softmax kernel.
pub type SoftmaxFn = fn(&q::softmax::QuantSoftmaxParams, In<'_, i8>, Out<'_, i8>);
/// Signature of a Quantize (f32 to int8) kernel.
pub type QuantizeFn = fn(&q::quantize::QuantizeParams, In<'_>, Out<'_, i8>);
/// Signature of a Dequantize (int8 to f32) kernel.
pub type DequantizeFn = fn(&q::dequantize::DequantizeParams, In<'_, i8>, Out<'_>);
/// Signature of a Requantize (int8 to int8) kernel.
pub type RequantizeFn = fn(&q::requantize::RequantizeParams, In<'_, i8>, Out<'_, i8>);

/// The int8 kernels under test, one function pointer per op (the int8 part of a target's kernel table).
#[derive(Clone, Copy, Debug)]
pub struct Int8Kernels {
    /// Conv2d, depthwise via groups.
    pub conv2d: Conv2dFn,
    /// FullyConnected.
    pub fully_connected: FullyConnectedFn,
    /// Add.
    pub add: AddFn,
    /// Mul.
    pub mul: MulFn,
    /// AvgPool2d.
    pub avg_pool: AvgPoolFn,
    /// MaxPool2d.
    pub max_pool: MaxPoolFn,
    /// Softmax.
    pub softmax: SoftmaxFn,
    /// Quantize.
    pub quantize: QuantizeFn,
    /// Dequantize.
    pub dequantize: DequantizeFn,
    /// Requantize.
    pub requantize: RequantizeFn,
}

/// `ember-core`'s reference int8 kernels.
pub const REFERENCE: Int8Kernels = Int8Kernels {
    conv2d: q::conv::conv2d,
    fully_connected: q::fully_connected::fully_connected,
    add: q::add::add,
    mul: q::mul::mul,
    avg_pool: q::avg_pool::avg_pool,
    max_pool: q::max_pool::max_pool,
    softmax: q::softmax::softmax,
    quantize: q::quantize::quantize,
    dequantize: q::dequantize::dequantize,
    requantize: q::requantize::requantize,
};

/// `v` rounded to the nearest integer, ties away from zero.
pub fn round_half_away(v: f64) -> f64 {
    v.round()
}

/// `min(max(v, lo), hi)`: the lower bound first, as the kernels clamp.
pub fn clamp_lower_first(v: i64, lo: i8, hi: i8) -> i8 {
    v.max(lo.into()).min(hi.into()) as i8
}

/// The real value `real` quantized with `scale` and `zero_point` (ties away from zero), then clamped to
/// `act_min..=act_max` (lower bound first). The real-valued definitions end with it.
pub fn requantize_real(real: f64, scale: f64, zero_point: i8, act_min: i8, act_max: i8) -> i8 {
    let q = round_half_away(real / scale).clamp(-1e12, 1e12) as i64 + i64::from(zero_point);
    clamp_lower_first(q, act_min, act_max)
}

/// `n / 2^e` rounded to nearest, ties away from zero, exactly.
pub fn div_pow2_half_away(n: i128, e: u32) -> i128 {
    if e == 0 {
        return n;
    }
    let d = 1i128 << e;
    let magnitude = (2 * n.abs() + d) / (2 * d);
    if n < 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// TFLite's `MultiplyByQuantizedMultiplier(x, multiplier, shift)` written from its definition with exact
/// arithmetic: `x * 2^left` (must fit int32), then `x * multiplier / 2^31` rounded to nearest with ties
/// toward +infinity (the doubling high multiply; `i32::MIN * i32::MIN` saturates), then divided by
/// `2^right` rounded with ties away from zero.
pub fn mbqm_definition(x: i64, multiplier: i32, shift: i32) -> i64 {
    let left = shift.max(0) as u32;
    let right = (-shift).max(0) as u32;
    let shifted = i128::from(x) << left;
    assert!(
        i32::try_from(shifted).is_ok(),
        "x << left overflows int32 in a test case"
    );
    let high = if shifted == i128::from(i32::MIN) && multiplier == i32::MIN {
        i128::from(i32::MAX)
    } else {
        (shifted * i128::from(multiplier) + (1 << 30)).div_euclid(1 << 31)
    };
    div_pow2_half_away(high, right) as i64
}

/// `x * multiplier / 2^(31 - shift)` rounded once, ties toward +infinity, from exact arithmetic
/// (TFLite's single-rounding `MultiplyByQuantizedMultiplier`).
pub fn single_rounding_definition(x: i64, multiplier: i32, shift: i32) -> i64 {
    let total = 31 - shift;
    let num = i128::from(x) * i128::from(multiplier);
    let den = 1i128 << total;
    (num + den / 2).div_euclid(den) as i64
}

/// The definition of `x` scaled by `(multiplier, shift)` in `rounding` mode.
pub fn scale_definition(rounding: RequantRounding, x: i64, multiplier: i32, shift: i32) -> i64 {
    match rounding {
        RequantRounding::Double => mbqm_definition(x, multiplier, shift),
        RequantRounding::Single => single_rounding_definition(x, multiplier, shift),
    }
}

/// Either rounding mode.
pub fn rounding() -> impl Strategy<Value = RequantRounding> {
    prop_oneof![Just(RequantRounding::Double), Just(RequantRounding::Single)]
}

/// Checks `|got[i] - want[i]| <= tolerance` for every output (int8 steps).
pub fn assert_within(got: &[i8], want: &[i8], tolerance: i32) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "output length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        prop_assert!(
            (i32::from(g) - i32::from(w)).abs() <= tolerance,
            "output {}: got {}, want {} (+-{})\n got: {:?}\nwant: {:?}",
            i,
            g,
            w,
            tolerance,
            got,
            want
        );
    }
    Ok(())
}

/// `n` int8 values, any.
pub fn int8_values(n: usize) -> impl Strategy<Value = Vec<i8>> {
    proptest::collection::vec(any::<i8>(), n)
}

/// A scale, log-uniform in `lo..hi`.
pub fn scale(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (lo.ln()..hi.ln()).prop_map(f64::exp)
}

/// A zero point: usually anything, now and then 0 or -128 (common in practice).
pub fn zero_point() -> impl Strategy<Value = i8> {
    prop_oneof![4 => any::<i8>(), 1 => Just(0i8), 1 => Just(-128i8)]
}

/// Fused activation bounds `(act_min, act_max)`: none, a Relu at the zero point `zp`, a random range,
/// or now and then crossed bounds (everything becomes `act_max`).
pub fn act_range(zp: i8) -> impl Strategy<Value = (i8, i8)> {
    prop_oneof![
        3 => Just((i8::MIN, i8::MAX)),
        2 => Just((zp, i8::MAX)),
        2 => (any::<i8>(), any::<i8>()).prop_map(|(a, b)| (a.min(b), a.max(b))),
        1 => (any::<i8>(), any::<i8>()),
    ]
}
