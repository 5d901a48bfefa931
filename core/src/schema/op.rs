//! The closed op set of the blob. Each variant carries resolved parameters; shapes come from the tensor
//! table. Inputs are listed in the op record in the order given here.

use serde::{Deserialize, Serialize};

use super::array::{
    ConcatParams, GatherParams, PadParams, ResizeParams, SliceParams, TransposeParams,
};
use super::math::{BinaryParams, CastParams, CompareParams, LogicalParams, UnaryParams};
use super::nn::{
    ArgReduceParams, Conv2dParams, ConvTranspose2dParams, FullyConnectedParams, LayerNormParams,
    MatMulParams, ReduceParams, SoftmaxParams,
};
use super::pool::Pool2dParams;
use super::quant::{
    DequantizeParams, QuantAddParams, QuantAvgPoolParams, QuantConv2dParams,
    QuantFullyConnectedParams, QuantMaxPoolParams, QuantMulParams, QuantSoftmaxParams,
    QuantizeParams, RequantizeParams,
};

/// Most inputs an op may have.
pub const MAX_OP_INPUTS: usize = 16;

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

/// The kinds' names by [`OpKind::position`] (those named by their parameters are never read here).
/// A table (a pointer and a length per kind, in `.rodata`) rather than a match: a match is an arm of
/// code per kind, which a firmware printing its profile paid in `.text` for every kind the format has
/// (measured on the int8 digits demo: 392 bytes less `.text`, 56 bytes less `.text` and `.rodata`).
static KIND_NAMES: [&str; KINDS] = [
    "Conv2d",
    "FullyConnected",
    "MatMul",
    "Binary",
    "Unary",
    "Softmax",
    "MaxPool2d",
    "AvgPool2d",
    "GlobalAvgPool",
    "Concat",
    "Transpose",
    "Pad",
    "Reshape",
    "LogSoftmax",
    "Reduce",
    "LayerNorm",
    "Slice",
    "Gather",
    "Broadcast",
    "Resize",
    "Compare",
    "Logical",
    "Not",
    "Where",
    "Cast",
    "ArgReduce",
    "ConvTranspose2d",
    "QuantConv2d",
    "QuantFullyConnected",
    "QuantAdd",
    "QuantMul",
    "QuantAvgPool2d",
    "QuantMaxPool2d",
    "QuantSoftmax",
    "Quantize",
    "Dequantize",
    "Requantize",
    "FullyConnectedW8",
    "Embedding",
];

/// Number of op kinds.
const KINDS: usize = 39;

impl OpKind {
    /// Short name, as shown by `ember inspect` and profiles.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Conv2d(p) if p.groups > 1 => "Conv2d(grouped)",
            OpKind::QuantConv2d(p) if p.groups > 1 => "QuantConv2d(grouped)",
            OpKind::Binary(p) => p.op.name(),
            OpKind::Unary(p) => p.op.name(),
            OpKind::Reduce(p) => p.op.name(),
            OpKind::Compare(p) => p.op.name(),
            OpKind::Logical(p) => p.op.name(),
            OpKind::ArgReduce(p) if p.max => "ArgMax",
            OpKind::ArgReduce(_) => "ArgMin",
            _ => KIND_NAMES[self.position()],
        }
    }

    /// The variant's position in the declaration (0 for `Conv2d`), which is also its tag: the
    /// compiler reads this match as the tag itself.
    fn position(&self) -> usize {
        match self {
            OpKind::Conv2d(_) => 0,
            OpKind::FullyConnected(_) => 1,
            OpKind::MatMul(_) => 2,
            OpKind::Binary(_) => 3,
            OpKind::Unary(_) => 4,
            OpKind::Softmax(_) => 5,
            OpKind::MaxPool2d(_) => 6,
            OpKind::AvgPool2d(_) => 7,
            OpKind::GlobalAvgPool => 8,
            OpKind::Concat(_) => 9,
            OpKind::Transpose(_) => 10,
            OpKind::Pad(_) => 11,
            OpKind::Reshape => 12,
            OpKind::LogSoftmax(_) => 13,
            OpKind::Reduce(_) => 14,
            OpKind::LayerNorm(_) => 15,
            OpKind::Slice(_) => 16,
            OpKind::Gather(_) => 17,
            OpKind::Broadcast => 18,
            OpKind::Resize(_) => 19,
            OpKind::Compare(_) => 20,
            OpKind::Logical(_) => 21,
            OpKind::Not => 22,
            OpKind::Where => 23,
            OpKind::Cast(_) => 24,
            OpKind::ArgReduce(_) => 25,
            OpKind::ConvTranspose2d(_) => 26,
            OpKind::QuantConv2d(_) => 27,
            OpKind::QuantFullyConnected(_) => 28,
            OpKind::QuantAdd(_) => 29,
            OpKind::QuantMul(_) => 30,
            OpKind::QuantAvgPool2d(_) => 31,
            OpKind::QuantMaxPool2d(_) => 32,
            OpKind::QuantSoftmax(_) => 33,
            OpKind::Quantize(_) => 34,
            OpKind::Dequantize(_) => 35,
            OpKind::Requantize(_) => 36,
            OpKind::FullyConnectedW8(_) => 37,
            OpKind::Embedding => 38,
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
            OpKind::Concat(_) => (1, MAX_OP_INPUTS),
            _ => (1, 1),
        }
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;

    /// Each kind's position is its index in the blob's encoding (postcard writes the variant index
    /// first), and the name table's entry at that position is the variant's name as `Debug` prints it.
    #[test]
    fn positions_and_names_follow_the_declaration() {
        let mut decoded = 0;
        for index in 0..0x80 {
            // (A one-byte varint: indices from 0x80 on take two bytes.)
            // The variant's index, then zeros: parameters of zeros, false and empty lists.
            let mut bytes = [0u8; 64];
            bytes[0] = index;
            let Ok(kind) = postcard::from_bytes::<OpKind>(&bytes) else {
                continue;
            };
            decoded += 1;
            assert_eq!(kind.position(), usize::from(index), "{kind:?}");
            let debug = alloc::format!("{kind:?}");
            let variant = debug.split(['(', ' ']).next().unwrap_or_default();
            assert_eq!(KIND_NAMES[kind.position()], variant);
        }
        assert_eq!(
            decoded, KINDS,
            "every kind decodes from its index and zeros"
        );
    }
}
