//! The closed op set of the blob. Each variant carries resolved parameters; shapes come from the tensor
//! table. Inputs are listed in the op record in the order given here.

use serde::{Deserialize, Serialize};

use crate::ops::array::{concat::ConcatParams, pad::PadParams, transpose::TransposeParams};
use crate::ops::array::{gather::GatherParams, resize::ResizeParams, slice::SliceParams};
use crate::ops::math::{binary::BinaryParams, unary::UnaryParams};
use crate::ops::nn::{
    conv::Conv2dParams, fully_connected::FullyConnectedParams, matmul::MatMulParams,
    softmax::SoftmaxParams,
};
use crate::ops::nn::{layer_norm::LayerNormParams, reduce::ReduceParams};
use crate::ops::pool::Pool2dParams;

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
}

impl OpKind {
    /// Short name, as shown by `ember inspect` and profiles.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Conv2d(p) if p.groups > 1 => "Conv2d(grouped)",
            OpKind::Conv2d(_) => "Conv2d",
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
        }
    }

    /// Allowed number of inputs, as `(min, max)`.
    pub fn arity(&self) -> (usize, usize) {
        match self {
            OpKind::Conv2d(_) | OpKind::FullyConnected(_) => (2, 3),
            OpKind::MatMul(_) | OpKind::Binary(_) => (2, 2),
            OpKind::LayerNorm(_) => (2, 3),

            OpKind::Gather(_) => (2, 2),
            OpKind::Concat(_) => (1, crate::format::MAX_OP_INPUTS),
            _ => (1, 1),
        }
    }
}
