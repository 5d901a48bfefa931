//! Parameters of the int8 ops (`ops::quant`), resolved by the converter: zero points, Q31 multipliers
//! and shifts, clamps, and how each op rounds. The constructors that derive them from float scales
//! (`from_scales`, `from_scale`) are converter-side math and stay with the kernels.

use serde::{Deserialize, Serialize};

use super::pool::Pool2dParams;

/// How an int8 op rounds when it scales an int32 value by a quantized multiplier. The converter picks it
/// per op and the blob stores it, so a model gives the same bytes on every target.
///
/// The modes differ by at most one LSB. Double rounding first rounds to `2^-r` of an output step (`r`
/// the right shift), so a value that close to a half-way point can round the wrong way: with `M` about
/// 0.226, `-1006 * M = -227.43` gives -228 in double rounding and -227 in single.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RequantRounding {
    /// TFLite's default and TFLM's reference arithmetic: [`multiply_by_quantized_multiplier`] (a
    /// rounding doubling high multiply, then a rounding right shift). Bit-identical to TFLM.
    ///
    /// [`multiply_by_quantized_multiplier`]: crate::ops::quant::requant::multiply_by_quantized_multiplier
    #[default]
    Double,
    /// One rounding of the exact product, ties toward +infinity:
    /// [`multiply_by_quantized_multiplier_single`] (TFLite's `TFLITE_SINGLE_ROUNDING`). It agrees with
    /// onnxruntime, which requantizes in float and rounds once, and is one multiply and one shift on a
    /// 32-bit core.
    ///
    /// [`multiply_by_quantized_multiplier_single`]: crate::ops::quant::requant::multiply_by_quantized_multiplier_single
    Single,
}

impl RequantRounding {
    /// The mode's name as the CLI spells it (`double`, `single`).
    pub fn name(self) -> &'static str {
        match self {
            RequantRounding::Double => "double",
            RequantRounding::Single => "single",
        }
    }
}

/// Parameters of an int8 convolution. Weights are symmetric int8 `[OC, KH, KW, IC / groups]` (OHWI),
/// the bias int32 `[OC]` (scale `x_scale * w_scale[oc]`, zero point 0), and the requantization an int32
/// tensor `[OC, 2]` of `(multiplier, shift)` rows for `x_scale * w_scale[oc] / y_scale` (or `[1, 2]`
/// for per-tensor weights).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantConv2dParams {
    /// Vertical stride.
    pub stride_h: u16,
    /// Horizontal stride.
    pub stride_w: u16,
    /// Vertical dilation.
    pub dilation_h: u16,
    /// Horizontal dilation.
    pub dilation_w: u16,
    /// Rows added above (they hold the input zero point, i.e. real 0).
    pub pad_top: u16,
    /// Columns added on the left.
    pub pad_left: u16,
    /// Rows added below.
    pub pad_bottom: u16,
    /// Columns added on the right.
    pub pad_right: u16,
    /// Number of groups; input and output channels are both multiples of it.
    pub groups: u16,
    /// Zero point of the input (TFLite's `input_offset` is its negation).
    pub x_zero_point: i8,
    /// Zero point of the output (TFLite's `output_offset`).
    pub y_zero_point: i8,
    /// Lower clamp of the output (fused activation), applied first.
    pub act_min: i8,
    /// Upper clamp of the output (fused activation).
    pub act_max: i8,
    /// How the output is rounded when it is scaled (see [`RequantRounding`]).
    pub rounding: RequantRounding,
}

/// Parameters of an int8 fully connected layer. Weights are symmetric int8 `[OUT, IN]`, the bias int32
/// `[OUT]` (scale `x_scale * w_scale[o]`), and the requantization an int32 tensor `[OUT, 2]` of
/// `(multiplier, shift)` rows for `x_scale * w_scale[o] / y_scale` (or `[1, 2]` for per-tensor weights).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantFullyConnectedParams {
    /// Zero point of the input.
    pub x_zero_point: i8,
    /// Zero point of the output.
    pub y_zero_point: i8,
    /// Lower clamp of the output (fused activation), applied first.
    pub act_min: i8,
    /// Upper clamp of the output (fused activation).
    pub act_max: i8,
    /// How the output is rounded when it is scaled (see [`RequantRounding`]).
    pub rounding: RequantRounding,
}

/// Parameters of an int8 Add (TFLite's `ArithmeticParams` for int8 Add; offsets stored as zero points).
/// The multipliers are below 1: `shift` in `-31..=0`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantAddParams {
    /// Zero point of `a`.
    pub a_zero_point: i8,
    /// Zero point of `b`.
    pub b_zero_point: i8,
    /// Zero point of `y`.
    pub y_zero_point: i8,
    /// Extra precision bits given to both inputs before scaling (20 for int8 in TFLite).
    pub left_shift: i32,
    /// Q31 multiplier of `a_scale / (2 * max(a_scale, b_scale))`.
    pub a_multiplier: i32,
    /// Shift of `a_multiplier`.
    pub a_shift: i32,
    /// Q31 multiplier of `b_scale / (2 * max(a_scale, b_scale))`.
    pub b_multiplier: i32,
    /// Shift of `b_multiplier`.
    pub b_shift: i32,
    /// Q31 multiplier of `2 * max(a_scale, b_scale) / (2^left_shift * y_scale)`.
    pub y_multiplier: i32,
    /// Shift of `y_multiplier`.
    pub y_shift: i32,
    /// Lower clamp of the output (fused activation), applied first.
    pub act_min: i8,
    /// Upper clamp of the output (fused activation).
    pub act_max: i8,
    /// How the output is rounded when it is scaled (see [`RequantRounding`]).
    pub rounding: RequantRounding,
}

/// Parameters of an int8 Mul.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantMulParams {
    /// Zero point of `a`.
    pub a_zero_point: i8,
    /// Zero point of `b`.
    pub b_zero_point: i8,
    /// Zero point of `y`.
    pub y_zero_point: i8,
    /// Q31 multiplier of `a_scale * b_scale / y_scale`.
    pub multiplier: i32,
    /// Shift of `multiplier`.
    pub shift: i32,
    /// Lower clamp of the output (fused activation), applied first.
    pub act_min: i8,
    /// Upper clamp of the output (fused activation).
    pub act_max: i8,
    /// How the output is rounded when it is scaled (see [`RequantRounding`]).
    pub rounding: RequantRounding,
}

/// Parameters of an int8 average pooling.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantAvgPoolParams {
    /// Window, strides and padding. Without `count_include_pad` (TFLite's only mode) the divisor is the
    /// number of valid cells; with it, padding cells count as holding `zero_point` (real 0).
    pub window: Pool2dParams,
    /// Zero point of input and output (only used with `count_include_pad`).
    pub zero_point: i8,
    /// Lower clamp of the output (fused activation), applied first.
    pub act_min: i8,
    /// Upper clamp of the output (fused activation).
    pub act_max: i8,
}

/// Parameters of an int8 max pooling.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantMaxPoolParams {
    /// Window, strides and padding (`count_include_pad` is ignored).
    pub window: Pool2dParams,
    /// Lower clamp of the output (fused activation), applied first.
    pub act_min: i8,
    /// Upper clamp of the output (fused activation).
    pub act_max: i8,
}

/// Parameters of an int8 softmax (TFLM's `SoftmaxParams` for int8).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantSoftmaxParams {
    /// The axis to normalize over (already resolved to a non-negative index).
    pub axis: u8,
    /// Q31 multiplier of `beta * x_scale * 2^26` (capped at `2^31 - 1`), applied after `input_left_shift`.
    pub input_multiplier: i32,
    /// Left shift of `input_multiplier` (`0..=31`).
    pub input_left_shift: i32,
    /// Differences from the lane maximum below this (in input steps, `<= 0`) give an output of -128
    /// (their exponential is below the Q5.26 range).
    pub diff_min: i32,
}

/// How `x / scale` is rounded to an integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Rounding {
    /// Ties away from zero (C `roundf`): TFLite and TFLM.
    HalfAwayFromZero,
    /// Ties to even: ONNX `QuantizeLinear`.
    HalfToEven,
}

/// Parameters of a quantization (per tensor).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantizeParams {
    /// Scale of the output (finite, positive).
    pub scale: f32,
    /// Zero point of the output.
    pub zero_point: i8,
    /// Rounding of `x / scale`.
    pub rounding: Rounding,
}

/// Parameters of a dequantization (per tensor).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DequantizeParams {
    /// Scale of the input (finite, positive).
    pub scale: f32,
    /// Zero point of the input.
    pub zero_point: i8,
}

/// Parameters of a requantization.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequantizeParams {
    /// Zero point of the input.
    pub x_zero_point: i8,
    /// Zero point of the output.
    pub y_zero_point: i8,
    /// Q31 multiplier of `x_scale / y_scale`.
    pub multiplier: i32,
    /// Shift of `multiplier`.
    pub shift: i32,
    /// How the output is rounded when it is scaled (see [`RequantRounding`]).
    pub rounding: RequantRounding,
}
