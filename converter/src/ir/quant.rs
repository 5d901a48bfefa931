//! Quantization in the IR: the [`Quant`] parameters a tensor carries, and [`QuantOp`], the int8 ops of
//! the TFLite int8 spec (ember-core's `ops::quant`) with every parameter already resolved on the host.
//!
//! A tensor's [`Quant`] means one of two things:
//! - on an I8 activation: its per-tensor `(scale, zero_point)` (lowering writes it into the blob's
//!   `TensorRecord.quant`);
//! - on a FLOAT constant: the constant is exactly `(q - zero_point) * scale` of integer values `q` of
//!   `dtype` (a DequantizeLinear of a constant, computed at import). The QDQ fusion pass
//!   (`passes::qdq`) recovers `q` as `round(value / scale) + zero_point` (exact: the float value is one
//!   f32 rounding away from `(q - zp) * scale`), so the weights of an int8 op are the model's own.
//!
//! The int8 ops read weights (I8), requantization rows (I32 `[OC, 2]` of `(multiplier, shift)`) and
//! biases (I32) as constant inputs, which the converter computes; the device never derives them.

use ember_core::ops::quant::{
    add::QuantAddParams, dequantize::DequantizeParams, fully_connected::QuantFullyConnectedParams,
    lut::TABLE_LEN, mul::QuantMulParams, quantize::QuantizeParams, requantize::RequantizeParams,
    softmax::QuantSoftmaxParams,
};
use ember_core::DType;

use super::op::nn::{infer_conv, infer_fully_connected, Conv2d};
use super::op::pool::{infer_pool, Pool2d};
use super::shape::broadcast;

/// Quantization parameters: per tensor (one scale) or per channel along `axis`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quant {
    /// Scales (finite, positive): one, or one per index of `axis`.
    pub scales: Vec<f32>,
    /// Zero points, as many as `scales`, in the range of `dtype`.
    pub zero_points: Vec<i32>,
    /// The channel axis of per-channel parameters (0 when per tensor).
    pub axis: usize,
    /// The integer type of the quantized values (I8 for Ember's activations; I8 or U8 for constants
    /// as the model stored them).
    pub dtype: DType,
}

impl Quant {
    /// Per-tensor int8 parameters.
    pub fn per_tensor(scale: f32, zero_point: i8) -> Self {
        Quant {
            scales: vec![scale],
            zero_points: vec![zero_point.into()],
            axis: 0,
            dtype: DType::I8,
        }
    }

    /// `(scale, zero_point)` when these are per-tensor int8 parameters.
    pub fn int8_scalar(&self) -> Option<(f32, i8)> {
        match (self.scales.as_slice(), self.zero_points.as_slice()) {
            ([s], [z]) if self.dtype == DType::I8 => Some((*s, i8::try_from(*z).ok()?)),
            _ => None,
        }
    }
}

/// An int8 op (inputs and output I8 unless said otherwise), or a conversion at an int8 edge.
#[derive(Clone, Debug, PartialEq)]
pub enum QuantOp {
    /// FLOAT to I8, per tensor.
    Quantize(QuantizeParams),
    /// I8 to FLOAT, per tensor.
    Dequantize(DequantizeParams),
    /// I8 to I8 with other `(scale, zero_point)`.
    Requantize(RequantizeParams),
    /// Inputs `x, w (I8 constant, symmetric), requant (I32 constant [OC, 2] or [1, 2])[, b (I32
    /// constant [OC])]`; the window, groups and layout of `conv` (its `act` is unused: the clamp is
    /// `act_min..=act_max`).
    Conv2d {
        /// Window, groups and layout.
        conv: Conv2d,
        /// Zero point of `x`.
        x_zero_point: i8,
        /// Zero point of the output.
        y_zero_point: i8,
        /// Lower clamp of the output.
        act_min: i8,
        /// Upper clamp of the output.
        act_max: i8,
    },
    /// Inputs `x [..., IN], w [OUT, IN] (I8 constant), requant (I32 constant)[, b (I32 constant)]`.
    FullyConnected(QuantFullyConnectedParams),
    /// Broadcasting int8 Add.
    Add(QuantAddParams),
    /// Broadcasting int8 Mul.
    Mul(QuantMulParams),
    /// Max pooling (input and output share scale and zero point).
    MaxPool {
        /// The window and layout.
        pool: Pool2d,
        /// Lower clamp.
        act_min: i8,
        /// Upper clamp.
        act_max: i8,
    },
    /// Average pooling (input and output share scale and zero point).
    AvgPool {
        /// The window and layout.
        pool: Pool2d,
        /// The zero point of input and output.
        zero_point: i8,
        /// Lower clamp.
        act_min: i8,
        /// Upper clamp.
        act_max: i8,
    },
    /// Softmax along `params.axis`; the output has scale 1/256 and zero point -128.
    Softmax(QuantSoftmaxParams),
    /// Any element-wise function by lookup: inputs `x, table (I8 constant [256])`, `y = table[x +
    /// 128]`. The QDQ pass computes the table of a float unary op between its input's Dequantize and
    /// its output's Quantize (`ops::quant::lut::table`); the op is named after that function.
    Lut {
        /// The function the table holds (for messages and `ember inspect`).
        function: &'static str,
    },
}

impl QuantOp {
    /// Short name for messages and the pass log.
    pub fn name(&self) -> &'static str {
        match self {
            QuantOp::Quantize(_) => "Quantize",
            QuantOp::Dequantize(_) => "Dequantize",
            QuantOp::Requantize(_) => "Requantize",
            QuantOp::Conv2d { .. } => "QuantConv2d",
            QuantOp::FullyConnected(_) => "QuantFullyConnected",
            QuantOp::Add(_) => "QuantAdd",
            QuantOp::Mul(_) => "QuantMul",
            QuantOp::MaxPool { .. } => "QuantMaxPool2d",
            QuantOp::AvgPool { .. } => "QuantAvgPool2d",
            QuantOp::Softmax(_) => "QuantSoftmax",
            QuantOp::Lut { .. } => "QuantLut",
        }
    }

    /// The output dtype for these input dtypes, or why they do not fit.
    pub fn infer_dtype(&self, x: &[DType]) -> Result<DType, String> {
        use DType::{F32, I32, I8};
        let (want, out): (&[DType], DType) = match self {
            QuantOp::Quantize(_) => (&[F32], I8),
            QuantOp::Dequantize(_) => (&[I8], F32),
            QuantOp::Conv2d { .. } | QuantOp::FullyConnected(_) => (&[I8, I8, I32, I32], I8),
            QuantOp::Add(_) | QuantOp::Mul(_) | QuantOp::Lut { .. } => (&[I8, I8], I8),
            _ => (&[I8], I8),
        };
        if x.is_empty() || x.len() > want.len() || x.iter().zip(want).any(|(a, b)| a != b) {
            let got: Vec<&str> = x.iter().map(|d| d.name()).collect();
            let need: Vec<&str> = want.iter().map(|d| d.name()).collect();
            return Err(format!(
                "{} takes inputs of types [{}], got [{}]",
                self.name(),
                need.join(", "),
                got.join(", ")
            ));
        }
        Ok(out)
    }

    /// The output dims for these input dims, or why they do not fit.
    pub fn infer(&self, x: &[&[usize]]) -> Result<Vec<usize>, String> {
        let arity = |lo: usize, hi: usize| super::shape::arity(x.len(), lo, hi);
        let requant = |rows: &[usize], channels: usize| {
            if rows.len() == 2 && rows[1] == 2 && (rows[0] == channels || rows[0] == 1) {
                Ok(())
            } else {
                Err(format!(
                    "requantization rows {rows:?} must be [{channels}, 2] or [1, 2]"
                ))
            }
        };
        match self {
            QuantOp::Quantize(_)
            | QuantOp::Dequantize(_)
            | QuantOp::Requantize(_)
            | QuantOp::Softmax(_) => {
                arity(1, 1)?;
                if let QuantOp::Softmax(p) = self {
                    if usize::from(p.axis) + 1 != x[0].len() {
                        return Err(format!("axis {} is not the last of {:?}", p.axis, x[0]));
                    }
                }
                Ok(x[0].to_vec())
            }
            QuantOp::Conv2d { conv, .. } => {
                arity(3, 4)?;
                let y = infer_conv(conv, x[0], x[1], x.get(3).copied())?;
                requant(x[2], x[1][0])?;
                Ok(y)
            }
            QuantOp::FullyConnected(_) => {
                arity(3, 4)?;
                let y = infer_fully_connected(x[0], x[1], x.get(3).copied())?;
                requant(x[2], x[1][0])?;
                Ok(y)
            }
            QuantOp::Add(_) | QuantOp::Mul(_) => {
                arity(2, 2)?;
                broadcast(x[0], x[1])
            }
            QuantOp::MaxPool { pool, .. } | QuantOp::AvgPool { pool, .. } => {
                arity(1, 1)?;
                infer_pool(pool, x[0])
            }
            QuantOp::Lut { .. } => {
                arity(2, 2)?;
                if x[1] != [TABLE_LEN] {
                    return Err(format!("the lookup table is {:?}, not [{TABLE_LEN}]", x[1]));
                }
                Ok(x[0].to_vec())
            }
        }
    }
}
