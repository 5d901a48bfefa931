//! The int8 kernels, with the CPU reference's integer arithmetic (`ember_core::ops::quant`), so that
//! their results are the same bytes.
//!
//! On the device an int8 activation is an f32 holding its integer value (exact: -128.0 to 127.0), so
//! the f32 data-movement kernels move int8 tensors unchanged; int8 weights, biases and requantization
//! rows are i32 buffers. Each kernel converts to i32, computes as the reference does (i32 accumulation
//! that wraps, requantization by a Q31 multiplier and shift in 64-bit integers), and stores the int8
//! result as an f32 again.

use cubecl::prelude::*;

use crate::kernels::math::broadcast_offsets;
use crate::kernels::nn::{conv_output, conv_tap, fully_connected_output};
use crate::kernels::pool::pool_window;

numbered! {
    /// Layout of the `params` table (i32) of the int8 kernels.
    pub(crate) mod params: usize, len LEN {
        /// Zero point of the (first) input.
        X_ZP,
        /// Zero point of the output.
        Y_ZP,
        /// Lower clamp of the output.
        ACT_MIN,
        /// Upper clamp of the output.
        ACT_MAX,
        /// 0: double rounding (TFLite's default), 1: single rounding.
        ROUNDING,
        /// Zero point of the second input (Add, Mul).
        B_ZP,
        /// Multiplier and shift pairs (Add: a, b, y; Mul and Requantize: y).
        M0,
        S0,
        M1,
        S1,
        M2,
        S2,
        /// Add: bits every input is shifted left by before scaling.
        LEFT_SHIFT,
    }
}

/// `x * multiplier * 2^(shift - 31)`, rounded as `rounding` says: 1 is one rounding of the exact
/// product with ties up; 0 TFLite's rounding doubling high multiply followed by a rounding right shift
/// (ties away from zero). `multiplier >= 0` and `shift` in `-31..=30` (the blob validator's checks).
///
/// The 64-bit products are taken on magnitudes (u64) with the sign handled apart: a first version
/// widened with `i64::cast_from`, and on lavapipe negative values came out of it as large positive ones.
#[cube]
pub(crate) fn scale(x: i32, multiplier: i32, shift: i32, rounding: i32) -> i32 {
    let mut out = scale_double(x, multiplier, shift);
    if rounding == 1 {
        out = scale_single(x, multiplier, shift);
    }
    out
}

/// `|x|` as a u32 (exact for `i32::MIN` too).
#[cube]
fn magnitude(x: i32) -> u32 {
    let mut m = u32::cast_from(x);
    if x < 0 {
        m = u32::cast_from(-(x + 1)) + u32::new(1);
    }
    m
}

/// `-m` as an i32, for `m <= 2^31`.
#[cube]
fn negative(m: u32) -> i32 {
    let mut r = 0i32;
    if m > u32::new(0) {
        r = -i32::cast_from(m - u32::new(1)) - 1;
    }
    r
}

/// One rounding of `x * multiplier / 2^(31 - shift)`, ties toward +infinity, saturated to i32.
#[cube]
fn scale_single(x: i32, multiplier: i32, shift: i32) -> i32 {
    let total = u64::cast_from(u32::cast_from(31 - shift));
    let one = u64::new(1);
    let half = one << (total - one);
    let product = u64::cast_from(magnitude(x)) * u64::cast_from(u32::cast_from(multiplier));
    let limit = u64::new(2_147_483_647);
    let mut out = 0i32;
    if x >= 0 {
        let q = (product + half) >> total;
        out = 2_147_483_647;
        if q <= limit {
            out = i32::cast_from(u32::cast_from(q));
        }
    } else if product > half {
        // floor((half - product) / 2^total) = -ceil((product - half) / 2^total).
        let q = (product - half + (one << total) - one) >> total;
        out = -2_147_483_647 - 1;
        if q <= limit + one {
            out = negative(u32::cast_from(q));
        }
    }
    out
}

/// TFLite's `MultiplyByQuantizedMultiplier`: `x * 2^max(shift, 0)` (wrapping), a rounding doubling
/// high multiply (ties up, truncating division), then a rounding divide by `2^max(-shift, 0)` (ties away
/// from zero).
#[cube]
fn scale_double(x: i32, multiplier: i32, shift: i32) -> i32 {
    let mut left = 0u32;
    if shift > 0 {
        left = u32::cast_from(shift);
    }
    let mut right = 0u32;
    if shift < 0 {
        right = u32::cast_from(-shift);
    }
    let shifted = i32::cast_from(u32::cast_from(x) << left);
    let product = u64::cast_from(magnitude(shifted)) * u64::cast_from(u32::cast_from(multiplier));
    // The high multiply's magnitude: (|ab| + 2^30) >> 31 for ab >= 0, (|ab| + 2^30 - 1) >> 31 below
    // (the nudge is 1 - 2^30 there and the division truncates toward zero). It is below 2^31.
    let mut nudged = product + u64::new(1 << 30);
    if shifted < 0 {
        nudged = product + u64::new((1 << 30) - 1);
    }
    let high = u32::cast_from(nudged >> u64::new(31));
    // Rounding divide by 2^right, ties away from zero, on the magnitude (symmetric in the sign).
    let mut q = high;
    if right > u32::new(0) {
        let widened = u64::cast_from(high) + (u64::new(1) << u64::cast_from(right - 1));
        q = u32::cast_from(widened >> u64::cast_from(right));
    }
    let mut out = i32::cast_from(q);
    if shifted < 0 {
        out = negative(q);
    }
    out
}

/// `clamp(v + zero_point, act_min, act_max)` as an f32, with the sum saturating as the reference's
/// `saturating_add`; the bounds are int8, so values far outside them clamp without adding.
#[cube]
fn output(v: i32, zero_point: i32, act_min: i32, act_max: i32) -> f32 {
    let mut r = act_max;
    if v < 1024 {
        r = act_min;
        if v > -1024 {
            r = v + zero_point;
            if r < act_min {
                r = act_min;
            }
            if r > act_max {
                r = act_max;
            }
        }
    }
    f32::cast_from(r)
}

/// The int8 value an activation holds.
#[cube]
fn int(v: f32) -> i32 {
    i32::cast_from(v)
}

/// The int8 output of output channel `o` from its i32 accumulator: plus the bias (when `has_bias != 0`),
/// scaled by the channel's row of `rows` (`[OC, 2]` multiplier and shift pairs, or one pair for all),
/// then offset by the output zero point and clamped (`p` is the `params` table).
#[cube]
fn requantized(acc: i32, has_bias: u32, bias: &[i32], rows: &[i32], p: &[i32], o: usize) -> f32 {
    let mut total = acc;
    if has_bias != 0 {
        total += bias[o];
    }
    let mut row = o * 2;
    if rows.len() == 2 {
        row = 0;
    }
    let scaled = scale(total, rows[row], rows[row + 1], p[4]);
    output(scaled, p[1], p[2], p[3])
}

/// An int8 layer with weights, one unit per output value: when `conv`, a convolution (groups,
/// depthwise; NHWC input and output, OHWI weights, `meta` the f32 convolution's, `nn::conv_meta`),
/// else a fully connected layer (`meta` is `[in features, out features, has bias]`). `rows` is the
/// `[OC, 2]` or `[1, 2]` requantization.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn quant_layer(
    x: &[f32],
    w: &[i32],
    bias: &[i32],
    rows: &[i32],
    y: &mut [f32],
    meta: &[u32],
    p: &[i32],
    #[comptime] conv: bool,
) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let x_offset = -p[0];
        if conv {
            let (acc, oc) = conv2d_acc(x, w, meta, pos, x_offset);
            y[pos] = requantized(acc, meta[17], bias, rows, p, oc);
        } else {
            let (acc, o) = fully_connected_acc(x, w, meta, pos, x_offset);
            y[pos] = requantized(acc, meta[2], bias, rows, p, o);
        }
    }
}

/// The i32 accumulator `sum w * (x + x_offset)` of output value `pos` of an int8 convolution, over
/// the taps of its window inside the input, and its output channel: `(acc, oc)`.
#[cube]
fn conv2d_acc(x: &[f32], w: &[i32], meta: &[u32], pos: usize, x_offset: i32) -> (i32, usize) {
    let (n, oy, ox, oc) = conv_output(meta, pos);
    let group_ic = meta[9] as usize;
    let mut acc = 0i32;
    for t in 0..(meta[7] * meta[8]) as usize {
        let (inside, x_at, w_at) = conv_tap(meta, n, oy, ox, oc, t);
        if inside {
            for c in 0..group_ic {
                acc += w[w_at + c] * (int(x[x_at + c]) + x_offset);
            }
        }
    }
    (acc, oc)
}

/// The i32 accumulator `w[o, :] . (x[r, :] + x_offset)` of output value `pos` of an int8 fully
/// connected layer, and its output feature: `(acc, o)`.
#[cube]
fn fully_connected_acc(
    x: &[f32],
    w: &[i32],
    meta: &[u32],
    pos: usize,
    x_offset: i32,
) -> (i32, usize) {
    let (x_at, w_at, in_f, o) = fully_connected_output(meta, pos);
    let mut acc = 0i32;
    for i in 0..in_f {
        acc += w[w_at + i] * (int(x[x_at + i]) + x_offset);
    }
    (acc, o)
}

/// Broadcasting int8 Add (`op == 0`) or Mul (`op == 1`); `meta` is the f32 binary kernel's.
#[cube(launch)]
pub(crate) fn quant_binary(a: &[f32], b: &[f32], y: &mut [f32], meta: &[u32], p: &[i32], op: u32) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let (a_at, b_at) = broadcast_offsets(meta, 1usize, meta[0] as usize, pos);
        let u = int(a[a_at]) - p[0];
        let v = int(b[b_at]) - p[5];
        let rounding = p[4];
        let mut result = scale(u * v, p[6], p[7], rounding);
        if op == 0 {
            let left = u32::cast_from(p[12]);
            let su = scale(
                i32::cast_from(u32::cast_from(u) << left),
                p[6],
                p[7],
                rounding,
            );
            let sv = scale(
                i32::cast_from(u32::cast_from(v) << left),
                p[8],
                p[9],
                rounding,
            );
            result = scale(su + sv, p[10], p[11], rounding);
        }
        y[pos] = output(result, p[1], p[2], p[3]);
    }
}

/// int8 max (`avg == 0`) or average pooling over windows clipped to the input, as the reference:
/// the average divides the i32 sum (padding cells holding the zero point when they count) rounding
/// half away from zero. `meta` is the f32 pooling kernel's.
#[cube(launch)]
pub(crate) fn quant_pool2d(x: &[f32], y: &mut [f32], meta: &[u32], p: &[i32], avg: u32) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let (at, y0, y1, x0, x1) = pool_window(meta, pos);
        let c_len = meta[2] as usize;
        let row = meta[1] as usize * c_len;
        let mut acc = 0i32;
        if avg == 0 {
            acc = -128i32;
        }
        for iy in y0..y1 {
            for ix in x0..x1 {
                let v = int(x[at + iy * row + ix * c_len]);
                if avg == 0 {
                    if v > acc {
                        acc = v;
                    }
                } else {
                    acc += v;
                }
            }
        }
        if avg != 0 {
            let cells = i32::cast_from((y1 - y0) * (x1 - x0));
            let mut count = cells;
            if meta[11] != 0 {
                count = i32::cast_from(meta[5] * meta[6]);
                acc += (count - cells) * p[0];
            }
            if acc > 0 {
                acc = (acc + count / 2) / count;
            } else {
                acc = (acc - count / 2) / count;
            }
        }
        y[pos] = output(acc, 0i32, p[2], p[3]);
    }
}

/// f32 to int8: `clamp(round(x / scale) + zero_point)`, ties away from zero (`even == 0`) or to even;
/// NaN gives the zero point.
#[cube(launch)]
pub(crate) fn quantize(x: &[f32], y: &mut [f32], scale: f32, zero_point: i32, even: u32) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let q = x[pos] / scale;
        let f = q.floor();
        let d = q - f;
        let mut r = f;
        if d > 0.5 {
            r = f + 1.0;
        }
        if d == 0.5 {
            if even == 0 {
                if q > 0.0 {
                    r = f + 1.0;
                }
            } else {
                let half = f * 0.5;
                if half.floor() != half {
                    r = f + 1.0;
                }
            }
        }
        // Saturate as `as i32` does (NaN to 0), then add the zero point and clamp to int8.
        let mut v = 0i32;
        if r >= f32::new(2147483648.0) {
            v = 2_147_483_647;
        } else if r <= f32::new(-2147483648.0) {
            v = -2_147_483_647 - 1;
        } else if !r.is_nan() {
            v = i32::cast_from(r);
        }
        y[pos] = output(v, zero_point, -128i32, 127i32);
    }
}

/// int8 to f32: `scale * (x - zero_point)`, one rounding of the exact product.
#[cube(launch)]
pub(crate) fn dequantize(x: &[f32], y: &mut [f32], scale: f32, zero_point: f32) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        y[pos] = scale * (x[pos] - zero_point);
    }
}

/// int8 to int8 with another scale and zero point: `p` holds the zero points, the rounding and the
/// multiplier in `M0`/`S0`.
#[cube(launch)]
pub(crate) fn requantize(x: &[f32], y: &mut [f32], p: &[i32]) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let scaled = scale(int(x[pos]) - p[0], p[6], p[7], p[4]);
        y[pos] = output(scaled, p[1], -128i32, 127i32);
    }
}

/// int8 lookup (`ember_core::ops::quant::lut`): `y = table[x + 128]`, the table the op's 256-entry
/// int8 weight, widened to i32. The index is clamped to the table, though validation and the int8
/// values of `x` keep it inside.
#[cube(launch)]
pub(crate) fn quant_lut(x: &[f32], table: &[i32], y: &mut [f32]) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let v = int(x[pos]) + 128i32;
        let mut index = 255u32;
        if v < 0i32 {
            index = 0u32;
        } else if v < 256i32 {
            index = u32::cast_from(v);
        }
        y[pos] = f32::cast_from(table[index as usize]);
    }
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul` for any signs: `round(a * b / 2^31)`, ties up, the
/// division truncating; `i32::MIN * i32::MIN` saturates.
#[cube]
fn mul_q31(a: i32, b: i32) -> i32 {
    let product = u64::cast_from(magnitude(a)) * u64::cast_from(magnitude(b));
    let negative_product = (a < 0 && b > 0) || (a > 0 && b < 0);
    let mut out = 2_147_483_647i32;
    if negative_product {
        out = negative(u32::cast_from(
            (product + u64::new((1 << 30) - 1)) >> u64::new(31),
        ));
    } else if !(a == -2_147_483_647 - 1 && b == -2_147_483_647 - 1) {
        out = i32::cast_from(u32::cast_from(
            (product + u64::new(1 << 30)) >> u64::new(31),
        ));
    }
    out
}

/// `round(x / 2^exponent)`, ties away from zero, for `exponent` in `0..=62`.
#[cube]
fn rounding_divide_by_pot(x: i32, exponent: u32) -> i32 {
    let mut out = x;
    if exponent > u32::new(0) {
        let e = u64::cast_from(exponent);
        let q = (u64::cast_from(magnitude(x)) + (u64::new(1) << (e - u64::new(1)))) >> e;
        out = i32::cast_from(u32::cast_from(q));
        if x < 0 {
            out = negative(u32::cast_from(q));
        }
    }
    out
}

/// `x * 2^exponent` saturated to int32, for `exponent` 1 or 2.
#[cube]
fn saturating_shl(x: i32, exponent: u32) -> i32 {
    let limit = 2_147_483_647i32 >> i32::cast_from(exponent);
    let mut out = x << i32::cast_from(exponent);
    if x > limit {
        out = 2_147_483_647;
    }
    if x < -limit - 1 {
        out = -2_147_483_647 - 1;
    }
    out
}

/// Leading zero bits of `x`.
#[cube]
fn leading_zeros(x: u32) -> u32 {
    let mut n = 0u32;
    let mut seen = false;
    for i in 0..32u32 {
        if !seen {
            if (x >> (31 - i)) & 1 == 1 {
                seen = true;
            } else {
                n += 1;
            }
        }
    }
    n
}

/// `1 / (1 + a)` for `a` in `[0, 1)`, Q0.31 in and out: three Newton-Raphson steps from
/// `48/17 - 32/17 d`, as the CPU reference (gemmlowp's `one_over_one_plus_x_for_x_in_0_1`).
#[cube]
fn one_over_one_plus_x(a: i32) -> i32 {
    // rounding_half_sum(a, i32::MAX) for a >= 0: (a + 2^31) / 2.
    let half_denominator = i32::cast_from(u32::cast_from(
        (u64::cast_from(u32::cast_from(a)) + (u64::new(1) << u64::new(31))) >> u64::new(1),
    ));
    let mut x = 1_515_870_810i32 + mul_q31(half_denominator, -1_010_580_540i32);
    for _ in 0..3u32 {
        let t = (1i32 << 29) - mul_q31(half_denominator, x);
        x += saturating_shl(mul_q31(x, t), 2u32);
    }
    saturating_shl(x, 1u32)
}

/// int8 softmax, TFLM's fixed-point algorithm as the CPU reference, one unit per lane. `exps` is
/// `ember_core::ops::quant::softmax::exp_table` (the exponential of every difference from the lane
/// maximum); `meta` is `[axis length, inner size, lanes]`.
#[cube(launch)]
pub(crate) fn quant_softmax(x: &[f32], y: &mut [f32], exps: &[i32], meta: &[u32]) {
    let pos = ABSOLUTE_POS;
    let len = meta[0] as usize;
    let inner = meta[1] as usize;
    if pos < meta[2] as usize {
        let base = (pos / inner) * len * inner + pos % inner;
        let mut max = i32::new(-128);
        for i in 0..len {
            let v = int(x[base + i * inner]);
            if v > max {
                max = v;
            }
        }
        let mut sum = i32::new(0);
        for i in 0..len {
            let e = exps[usize::cast_from(int(x[base + i * inner]) - max + 255)];
            sum += rounding_divide_by_pot(e, 12u32);
        }
        // TFLite's GetReciprocal with 12 integer bits: 1 / sum = r * 2^-bits_over_unit.
        let headroom = leading_zeros(u32::cast_from(sum));
        let mut normalized = u32::new(0);
        if headroom < u32::new(32) {
            normalized = u32::cast_from(sum) << headroom;
        }
        // normalized is in [2^31, 2^32): minus 2^31 is its low 31 bits.
        let r = one_over_one_plus_x(i32::cast_from(normalized & u32::new(2_147_483_647)));
        let bits_over_unit = i32::new(12) - i32::cast_from(headroom);
        let mut exponent = u32::new(0);
        if bits_over_unit > -23 {
            exponent = u32::cast_from(bits_over_unit + 23);
        }
        for i in 0..len {
            let e = exps[usize::cast_from(int(x[base + i * inner]) - max + 255)];
            let scaled = rounding_divide_by_pot(mul_q31(r, e), exponent);
            y[base + i * inner] = output(scaled, -128i32, -128i32, 127i32);
        }
    }
}
