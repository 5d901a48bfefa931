//! Parameters of the neural-network ops (`ops::nn`): convolutions, fully connected, matrix multiply,
//! softmax, reductions, layer normalization and arg-reductions.
//!
//! A new op's parameters go in a file of their own in this folder (as `layer_norm.rs`'s), which its
//! row of the op set (`crate::op_set`) names by its path; the kinds of the format's first versions
//! share this file.

use serde::{Deserialize, Serialize};

use super::math::Activation;

// One module per file of this folder: a new op's parameters need no line here.
automod::dir!(pub "src/schema/nn");

/// Parameters of a 2-D convolution. Weights are `[OC, KH, KW, IC / groups]` (OHWI), bias `[OC]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Conv2dParams {
    /// Vertical stride.
    pub stride_h: u16,
    /// Horizontal stride.
    pub stride_w: u16,
    /// Vertical dilation.
    pub dilation_h: u16,
    /// Horizontal dilation.
    pub dilation_w: u16,
    /// Zero rows added above.
    pub pad_top: u16,
    /// Zero columns added on the left.
    pub pad_left: u16,
    /// Zero rows added below.
    pub pad_bottom: u16,
    /// Zero columns added on the right.
    pub pad_right: u16,
    /// Number of groups; input and output channels are both multiples of it.
    pub groups: u16,
    /// Activation applied to each output.
    pub act: Activation,
}

/// Parameters of a fully connected layer. Weights are `[OUT, IN]` (row-major, one row per output).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FullyConnectedParams {
    /// Activation applied to each output.
    pub act: Activation,
}

/// Parameters of a matrix multiply (none yet; the shapes say everything).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MatMulParams {}

/// Parameters of a softmax.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SoftmaxParams {
    /// The axis to normalize over (already resolved to a non-negative index).
    pub axis: u8,
}

/// Which reduction to apply over each lane (the elements that map to one output).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ReduceOp {
    /// `sum(x)`; 0 over nothing.
    Sum,
    /// `sum(x) / n`; NaN over nothing.
    Mean,
    /// `max(x)`; -inf over nothing.
    Max,
    /// `min(x)`; +inf over nothing.
    Min,
    /// `prod(x)`; 1 over nothing.
    Prod,
    /// `sum(|x|)`.
    L1,
    /// `sqrt(sum(x^2))`.
    L2,
    /// `log(sum(exp(x)))`, computed stably (the maximum is subtracted first).
    LogSumExp,
    /// `sum(x^2)`.
    SumSquare,
    /// `log(sum(x))`.
    LogSum,
}

impl ReduceOp {
    /// The ONNX op's name (`ReduceSum`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            ReduceOp::Sum => "ReduceSum",
            ReduceOp::Mean => "ReduceMean",
            ReduceOp::Max => "ReduceMax",
            ReduceOp::Min => "ReduceMin",
            ReduceOp::Prod => "ReduceProd",
            ReduceOp::L1 => "ReduceL1",
            ReduceOp::L2 => "ReduceL2",
            ReduceOp::LogSumExp => "ReduceLogSumExp",
            ReduceOp::SumSquare => "ReduceSumSquare",
            ReduceOp::LogSum => "ReduceLogSum",
        }
    }
}

/// Parameters of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReduceParams {
    /// The function.
    pub op: ReduceOp,
    /// The reduced axes, as a bitmask (bit `d` for axis `d`; only bits below the rank may be set).
    pub axes: u8,
    /// The output keeps reduced axes as dims of 1 (otherwise they are removed).
    pub keepdims: bool,
}

/// Parameters of an arg-reduction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArgReduceParams {
    /// ArgMax if true, ArgMin if false.
    pub max: bool,
    /// The reduced axis.
    pub axis: u8,
    /// The output keeps the axis as a dim of 1.
    pub keepdims: bool,
    /// On ties, the last index instead of the first.
    pub select_last_index: bool,
}

/// Parameters of a 2-D transposed convolution. Weights are `[OC, KH, KW, IC / groups]`, bias `[OC]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConvTranspose2dParams {
    /// Vertical stride (input rows are this far apart in the output).
    pub stride_h: u16,
    /// Horizontal stride.
    pub stride_w: u16,
    /// Vertical dilation of the kernel.
    pub dilation_h: u16,
    /// Horizontal dilation of the kernel.
    pub dilation_w: u16,
    /// Rows cropped from the top of the full output.
    pub pad_top: u16,
    /// Columns cropped from the left of the full output.
    pub pad_left: u16,
    /// Rows cropped from the bottom of the full output.
    pub pad_bottom: u16,
    /// Columns cropped from the right of the full output.
    pub pad_right: u16,
    /// Rows added below the full output (they see only the bias).
    pub output_pad_h: u16,
    /// Columns added right of the full output.
    pub output_pad_w: u16,
    /// Number of groups; input and output channels are both multiples of it.
    pub groups: u16,
    /// Activation applied to each output.
    pub act: Activation,
}
