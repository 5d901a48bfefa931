//! The 256-entry tables of int8 element-wise ops whose TFLite kernels compute in integers rather than
//! through a float function: each entry is what TFLM's reference kernel gives for that input, with the
//! parameters TFLM's `Prepare` derives from the scales (in the same float precision), so that the
//! blob's `QuantLut` gives TFLM's bytes. The QDQ pass's tables (the float function between the
//! Dequantize and the Quantize) can differ from these by one step.

use ember_core::ops::quant::requant::{
    multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_single, quantize_multiplier,
    RequantRounding,
};

/// Scale and zero point of an int8 tensor.
pub(crate) type Int8Params = (f32, i8);

/// Every int8 input, in table order (`table[x + 128]`).
fn inputs() -> impl Iterator<Item = i32> {
    -128..=127
}

fn saturate(v: i32) -> i8 {
    v.clamp(i8::MIN.into(), i8::MAX.into()) as i8
}

/// LEAKY_RELU: `x - zp` times the identity multiplier `x_scale / y_scale` at or above zero, times the
/// alpha multiplier `x_scale * alpha / y_scale` below it (its sign taken out first), plus the output
/// zero point. Both multipliers are computed in f32, as TFLM does, then widened.
pub(crate) fn leaky_relu(
    x: Int8Params,
    y: Int8Params,
    alpha: f32,
    rounding: RequantRounding,
) -> Vec<i8> {
    let multiply = |v: i32, (m, s): (i32, i32)| match rounding {
        RequantRounding::Double => multiply_by_quantized_multiplier(v, m, s),
        RequantRounding::Single => multiply_by_quantized_multiplier_single(v, m, s),
    };
    let identity = quantize_multiplier(f64::from(x.0 / y.0));
    let (alpha_m, alpha_s) = quantize_multiplier(f64::from(x.0 * alpha / y.0));
    inputs()
        .map(|q| {
            let v = q - i32::from(x.1);
            let scaled = if v >= 0 {
                multiply(v, identity)
            } else {
                let m = multiply(v, (alpha_m.wrapping_abs(), alpha_s));
                if alpha_m < 0 {
                    -m
                } else {
                    m
                }
            };
            saturate(i32::from(y.1) + scaled)
        })
        .collect()
}

/// `round(a * b / 2^15)` of 16-bit fixed-point values, ties toward +infinity, saturating
/// `MIN * MIN` (gemmlowp's 16-bit `SaturatingRoundingDoublingHighMul`).
fn rounding_high_mul16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    let ab = i32::from(a) * i32::from(b);
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// `a * b / 2^15` truncated toward zero, saturating `MIN * MIN` (TFLite's 16-bit
/// `SaturatingDoublingHighMul`, which has no rounding nudge).
fn high_mul16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    ((i32::from(a) * i32::from(b)) / (1 << 15)) as i16
}

/// `round(x / 2^exponent)`, ties away from zero, on 16-bit values.
fn rounding_divide16(x: i16, exponent: i32) -> i16 {
    let exponent = exponent.clamp(0, 15);
    let x = i32::from(x);
    let mask = (1 << exponent) - 1;
    let threshold = (mask >> 1) + i32::from(x < 0);
    ((x >> exponent) + i32::from((x & mask) > threshold)) as i16
}

fn saturating_shift16(v: i16, amount: i32) -> i16 {
    let r = i64::from(v) * (1i64 << amount.clamp(0, 31));
    r.clamp(i16::MIN.into(), i16::MAX.into()) as i16
}

/// A Q31 multiplier rounded to Q15 (TFLite's `DownScaleInt32ToInt16Multiplier`).
fn q15(m: i32) -> i16 {
    if m >= i32::MAX - (1 << 15) {
        return i16::MAX;
    }
    ((m + (1 << 15)) >> 16) as i16
}

/// HARD_SWISH in TFLite's 16-bit fixed point: the input on a scale 128 times finer, its "relu-ish"
/// factor `clamp((x + 3) / 6, 0, 1)` in Q15 (from the input rescaled so that 3.0 is 2^15), their
/// product shifted onto the output scale. Multipliers from f32 ratios, as TFLM's `HardSwishPrepare`.
pub(crate) fn hard_swish(x: Int8Params, y: Int8Params) -> Vec<i8> {
    let hires_scale = (1.0f32 / 128.0) * x.0;
    let (out_m, out_exp) = quantize_multiplier(f64::from(hires_scale / y.0));
    let (relu_m, relu_exp) = quantize_multiplier(f64::from(hires_scale / (3.0f32 / 32768.0)));
    let (out_m, relu_m) = (q15(out_m), q15(relu_m));
    inputs()
        .map(|q| {
            // |q - zp| <= 255, so these fit 16 bits as in TFLite.
            let v = (q - i32::from(x.1)) as i16;
            let hires = v.wrapping_mul(1 << 7);
            let on_output_scale = rounding_high_mul16(hires, out_m);
            let mut reluish = hires;
            if relu_exp > 0 {
                reluish = saturating_shift16(reluish, relu_exp - 1);
            }
            reluish = rounding_high_mul16(reluish, relu_m);
            if relu_exp > 0 {
                reluish = saturating_shift16(reluish, 1);
            }
            if relu_exp < 0 {
                reluish = rounding_divide16(reluish, -relu_exp);
            }
            // From [-1, 1] to [0, 1] in Q15.
            let reluish = ((i32::from(reluish) + (1 << 15)) >> 1) as i16;
            let product = high_mul16(reluish, on_output_scale);
            let out = rounding_divide16(product, -out_exp);
            saturate(i32::from(out.wrapping_add(i16::from(y.1))))
        })
        .collect()
}
