//! The closed op set of the blob. Each variant carries resolved parameters; shapes come from the tensor
//! table. Inputs are listed in the op record in the order given here.

use serde::{Deserialize, Serialize};

use crate::ops::array::{concat::ConcatParams, pad::PadParams, transpose::TransposeParams};
use crate::ops::array::{gather::GatherParams, resize::ResizeParams, slice::SliceParams};
use crate::ops::math::{binary::BinaryParams, unary::UnaryParams};
use crate::ops::math::{cast::CastParams, compare::CompareParams, logical::LogicalParams};
use crate::ops::nn::arg_reduce::ArgReduceParams;
use crate::ops::nn::conv_transpose::ConvTranspose2dParams;
use crate::ops::nn::{
    conv::Conv2dParams, fully_connected::FullyConnectedParams, matmul::MatMulParams,
    softmax::SoftmaxParams,
};
use crate::ops::nn::{layer_norm::LayerNormParams, reduce::ReduceParams};
use crate::ops::pool::Pool2dParams;
use crate::ops::quant::{
    add::QuantAddParams, avg_pool::QuantAvgPoolParams, conv::QuantConv2dParams,
    dequantize::DequantizeParams, fully_connected::QuantFullyConnectedParams,
    max_pool::QuantMaxPoolParams, mul::QuantMulParams, quantize::QuantizeParams,
    requantize::RequantizeParams, softmax::QuantSoftmaxParams,
};

/// One op of the blob, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OpKind {
    /// Inputs `x, w[, b]`.
    Conv2d(Conv2dParams),
    /// Inputs `x, w[, b]`.
    FullyConnected(FullyConnectedParams),
    /// Inputs `a, b`.
    MatMul(MatMulParams),
    /// Inputs `a, b`.
    Binary(BinaryParams),
    /// Input `x`.
    Unary(UnaryParams),
    /// Input `x`.
    Softmax(SoftmaxParams),
    /// Input `x`.
    MaxPool2d(Pool2dParams),
    /// Input `x`.
    AvgPool2d(Pool2dParams),
    /// Input `x`.
    GlobalAvgPool,
    /// Inputs `x0, x1, ...` (at least one).
    Concat(ConcatParams),
    /// Input `x`.
    Transpose(TransposeParams),
    /// Input `x`.
    Pad(PadParams),
    /// Input `x`; an alias when input and output share arena bytes.
    Reshape,
    /// Input `x`.
    LogSoftmax(SoftmaxParams),
    /// Input `x`.
    Reduce(ReduceParams),
    /// Inputs `x, scale[, bias]`.
    LayerNorm(LayerNormParams),
    /// Input `x`.
    Slice(SliceParams),
    /// Inputs `x, indices` (indices: a weight tensor of whole f32 values inside the axis).
    Gather(GatherParams),
    /// Input `x`, repeated along its size-1 axes.
    Broadcast,
    /// Input `x`; resizes the last two axes.
    Resize(ResizeParams),
    /// Inputs `a, b` (one dtype); output Bool.
    Compare(CompareParams),
    /// Inputs `a, b` (Bool); output Bool.
    Logical(LogicalParams),
    /// Input `x` (Bool); output Bool.
    Not,
    /// Inputs `cond` (Bool), `a, b` (the output's dtype).
    Where,
    /// Input `x`; output of dtype `to`.
    Cast(CastParams),
    /// Input `x`; output I64 (ArgMax / ArgMin).
    ArgReduce(ArgReduceParams),
    /// Inputs `x, w[, b]`.
    ConvTranspose2d(ConvTranspose2dParams),
    /// int8 convolution; inputs `x` (I8), `w` (I8, OHWI), `requant` (I32 `[OC, 2]` or `[1, 2]`
    /// multiplier and shift rows)`[, b]` (I32 `[OC]`).
    QuantConv2d(QuantConv2dParams),
    /// int8 fully connected; inputs as [`OpKind::QuantConv2d`] with `w` `[OUT, IN]`.
    QuantFullyConnected(QuantFullyConnectedParams),
    /// int8 broadcasting add; inputs `a, b` (I8).
    QuantAdd(QuantAddParams),
    /// int8 broadcasting multiply; inputs `a, b` (I8).
    QuantMul(QuantMulParams),
    /// int8 average pooling; input `x` (I8).
    QuantAvgPool2d(QuantAvgPoolParams),
    /// int8 max pooling; input `x` (I8).
    QuantMaxPool2d(QuantMaxPoolParams),
    /// int8 softmax (output scale 1/256, zero point -128); input `x` (I8).
    QuantSoftmax(QuantSoftmaxParams),
    /// f32 to int8; input `x` (F32).
    Quantize(QuantizeParams),
    /// int8 to f32; input `x` (I8).
    Dequantize(DequantizeParams),
    /// int8 to int8 with another scale and zero point; input `x` (I8).
    Requantize(RequantizeParams),
    /// Fully connected with weight-only int8 (f32 activations); inputs `x` (F32), `w` (I8
    /// `[OUT, IN]`), `scales` (F32 `[OUT]`)`[, b]` (F32 `[OUT]`); output F32.
    FullyConnectedW8(FullyConnectedParams),
    /// Embedding lookup by run-time ids; inputs `table` (F32, or I8 with `scales`), `ids` (I32 or
    /// I64)`[, scales]` (F32 `[ROWS]`); output F32.
    Embedding,
}

impl OpKind {
    /// Short name, as shown by `ember inspect` and profiles.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Conv2d(p) if p.groups > 1 => "Conv2d(grouped)",
            OpKind::Conv2d(_) => "Conv2d",
            OpKind::ConvTranspose2d(_) => "ConvTranspose2d",
            OpKind::QuantConv2d(p) if p.groups > 1 => "QuantConv2d(grouped)",
            OpKind::QuantConv2d(_) => "QuantConv2d",
            OpKind::QuantFullyConnected(_) => "QuantFullyConnected",
            OpKind::QuantAdd(_) => "QuantAdd",
            OpKind::QuantMul(_) => "QuantMul",
            OpKind::QuantAvgPool2d(_) => "QuantAvgPool2d",
            OpKind::QuantMaxPool2d(_) => "QuantMaxPool2d",
            OpKind::QuantSoftmax(_) => "QuantSoftmax",
            OpKind::Quantize(_) => "Quantize",
            OpKind::Dequantize(_) => "Dequantize",
            OpKind::Requantize(_) => "Requantize",
            OpKind::FullyConnectedW8(_) => "FullyConnectedW8",
            OpKind::Embedding => "Embedding",
            OpKind::FullyConnected(_) => "FullyConnected",
            OpKind::MatMul(_) => "MatMul",
            OpKind::Binary(p) => p.op.name(),
            OpKind::Unary(p) => p.op.name(),
            OpKind::Softmax(_) => "Softmax",
            OpKind::MaxPool2d(_) => "MaxPool2d",
            OpKind::AvgPool2d(_) => "AvgPool2d",
            OpKind::GlobalAvgPool => "GlobalAvgPool",
            OpKind::Concat(_) => "Concat",
            OpKind::Transpose(_) => "Transpose",
            OpKind::Pad(_) => "Pad",
            OpKind::Reshape => "Reshape",
            OpKind::LogSoftmax(_) => "LogSoftmax",
            OpKind::Reduce(p) => match p.op {
                crate::ops::nn::reduce::ReduceOp::Sum => "ReduceSum",
                crate::ops::nn::reduce::ReduceOp::Mean => "ReduceMean",
                crate::ops::nn::reduce::ReduceOp::Max => "ReduceMax",
                crate::ops::nn::reduce::ReduceOp::Min => "ReduceMin",
                crate::ops::nn::reduce::ReduceOp::Prod => "ReduceProd",
                crate::ops::nn::reduce::ReduceOp::L1 => "ReduceL1",
                crate::ops::nn::reduce::ReduceOp::L2 => "ReduceL2",
                crate::ops::nn::reduce::ReduceOp::LogSumExp => "ReduceLogSumExp",
                crate::ops::nn::reduce::ReduceOp::SumSquare => "ReduceSumSquare",
                crate::ops::nn::reduce::ReduceOp::LogSum => "ReduceLogSum",
            },
            OpKind::LayerNorm(_) => "LayerNorm",
            OpKind::Slice(_) => "Slice",
            OpKind::Gather(_) => "Gather",
            OpKind::Broadcast => "Broadcast",
            OpKind::Resize(_) => "Resize",
            OpKind::Compare(p) => p.op.name(),
            OpKind::Logical(p) => p.op.name(),
            OpKind::Not => "Not",
            OpKind::Where => "Where",
            OpKind::Cast(_) => "Cast",
            OpKind::ArgReduce(p) if p.max => "ArgMax",
            OpKind::ArgReduce(_) => "ArgMin",
        }
    }

    /// Allowed number of inputs, as `(min, max)`.
    pub fn arity(&self) -> (usize, usize) {
        match self {
            OpKind::Conv2d(_) | OpKind::FullyConnected(_) => (2, 3),
            OpKind::ConvTranspose2d(_) => (2, 3),
            OpKind::QuantConv2d(_) | OpKind::QuantFullyConnected(_) => (3, 4),
            OpKind::QuantAdd(_) | OpKind::QuantMul(_) => (2, 2),
            OpKind::FullyConnectedW8(_) => (3, 4),
            OpKind::Embedding => (2, 3),
            OpKind::MatMul(_) | OpKind::Binary(_) => (2, 2),
            OpKind::Compare(_) | OpKind::Logical(_) => (2, 2),
            OpKind::Where => (3, 3),
            OpKind::LayerNorm(_) => (2, 3),

            OpKind::Gather(_) => (2, 2),
            OpKind::Concat(_) => (1, crate::format::MAX_OP_INPUTS),
            _ => (1, 1),
        }
    }
}
