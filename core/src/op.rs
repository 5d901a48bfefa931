//! The closed op set of the blob. Each variant carries resolved parameters; shapes come from the tensor
//! table. Inputs are listed in the op record in the order given here.

use serde::{Deserialize, Serialize};

use crate::ops::array::{concat::ConcatParams, pad::PadParams, transpose::TransposeParams};
use crate::ops::math::{binary::BinaryParams, unary::UnaryParams};
use crate::ops::nn::{
    conv::Conv2dParams, fully_connected::FullyConnectedParams, matmul::MatMulParams,
    softmax::SoftmaxParams,
};
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
}

impl OpKind {
    /// Short name, as shown by `ember inspect` and profiles.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Conv2d(p) if p.groups > 1 => "Conv2d(grouped)",
            OpKind::Conv2d(_) => "Conv2d",
            OpKind::FullyConnected(_) => "FullyConnected",
            OpKind::MatMul(_) => "MatMul",
            OpKind::Binary(p) => match p.op {
                crate::ops::math::binary::BinaryOp::Add => "Add",
                crate::ops::math::binary::BinaryOp::Sub => "Sub",
                crate::ops::math::binary::BinaryOp::Mul => "Mul",
                crate::ops::math::binary::BinaryOp::Div => "Div",
            },
            OpKind::Unary(p) => match p.op {
                crate::ops::math::unary::UnaryOp::Relu => "Relu",
                crate::ops::math::unary::UnaryOp::Relu6 => "Relu6",
                crate::ops::math::unary::UnaryOp::Clip { .. } => "Clip",
                crate::ops::math::unary::UnaryOp::Sigmoid => "Sigmoid",
                crate::ops::math::unary::UnaryOp::Tanh => "Tanh",
            },
            OpKind::Softmax(_) => "Softmax",
            OpKind::MaxPool2d(_) => "MaxPool2d",
            OpKind::AvgPool2d(_) => "AvgPool2d",
            OpKind::GlobalAvgPool => "GlobalAvgPool",
            OpKind::Concat(_) => "Concat",
            OpKind::Transpose(_) => "Transpose",
            OpKind::Pad(_) => "Pad",
            OpKind::Reshape => "Reshape",
        }
    }

    /// Allowed number of inputs, as `(min, max)`.
    pub fn arity(&self) -> (usize, usize) {
        match self {
            OpKind::Conv2d(_) | OpKind::FullyConnected(_) => (2, 3),
            OpKind::MatMul(_) | OpKind::Binary(_) => (2, 2),
            OpKind::Concat(_) => (1, crate::format::MAX_OP_INPUTS),
            _ => (1, 1),
        }
    }
}
