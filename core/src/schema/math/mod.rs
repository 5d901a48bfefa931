//! Parameters of the element-wise ops (`ops::math`): the fused activation, the unary and binary
//! functions, casts, comparisons and boolean logic.

use serde::{Deserialize, Serialize};

use super::tensor::DType;

// One module per file of this folder: a new op's parameters need no line here.
automod::dir!(pub "src/schema/math");

/// An activation fused into the op that produces a tensor (Conv2d, FullyConnected, Binary).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Activation {
    /// Identity.
    None,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
    /// `min(max(x, min), max)`.
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
}

/// Which binary function to apply. The variant index is in the blob: new variants go at the end.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b` (IEEE division: x/0 is inf or NaN).
    Div,
    /// `a` to the power `b` (C `powf`: NaN for a negative base and a non-integer exponent).
    Pow,
    /// The smaller of `a` and `b`; NaN if either is.
    Min,
    /// The larger of `a` and `b`; NaN if either is.
    Max,
    /// `a < 0 ? b * a : a` (ONNX `PRelu`, `b` the slope).
    PRelu,
    /// `a - trunc(a / b) * b`, the sign of `a` (C `fmod`, ONNX `Mod` with `fmod=1`).
    Mod,
    /// `a - floor(a / b) * b`, the sign of `b` (Python's `%`, ONNX `Mod` with `fmod=0`).
    FloorMod,
}

impl BinaryOp {
    /// Short name, as shown by `ember inspect`.
    pub fn name(&self) -> &'static str {
        match self {
            BinaryOp::Add => "Add",
            BinaryOp::Sub => "Sub",
            BinaryOp::Mul => "Mul",
            BinaryOp::Div => "Div",
            BinaryOp::Pow => "Pow",
            BinaryOp::Min => "Min",
            BinaryOp::Max => "Max",
            BinaryOp::PRelu => "PRelu",
            BinaryOp::Mod => "Mod",
            BinaryOp::FloorMod => "FloorMod",
        }
    }
}

/// Parameters of a binary op.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BinaryParams {
    /// The function.
    pub op: BinaryOp,
    /// Activation applied to each result.
    pub act: Activation,
}

/// Which unary function to apply. The variant index is in the blob: new variants go at the end.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UnaryOp {
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
    /// `min(max(x, min), max)`.
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    /// Hyperbolic tangent.
    Tanh,
    /// `|x|`.
    Abs,
    /// `-x`.
    Neg,
    /// Square root (NaN below 0).
    Sqrt,
    /// `e^x`.
    Exp,
    /// Natural logarithm (`-inf` at 0, NaN below).
    Log,
    /// The error function.
    Erf,
    /// `x/2 (1 + erf(x / sqrt(2)))` (ONNX `Gelu`, `approximate="none"`).
    Gelu,
    /// `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (ONNX `Gelu`, `approximate="tanh"`).
    GeluTanh,
    /// Largest integer `<= x`.
    Floor,
    /// Smallest integer `>= x`.
    Ceil,
    /// Nearest integer, halves to even (`Round(2.5) = 2`, `Round(-0.5) = -0`).
    Round,
    /// `1 / x`.
    Reciprocal,
    /// `x < 0 ? alpha x : x`.
    LeakyRelu {
        /// Slope below 0.
        alpha: f32,
    },
    /// `max(0, min(1, alpha x + beta))`.
    HardSigmoid {
        /// Slope.
        alpha: f32,
        /// Offset.
        beta: f32,
    },
    /// `x max(0, min(1, x/6 + 1/2))`.
    HardSwish,
    /// `x < 0 ? alpha (e^x - 1) : x`.
    Elu {
        /// Scale below 0.
        alpha: f32,
    },
    /// `gamma (x <= 0 ? alpha (e^x - 1) : x)`.
    Selu {
        /// Scale of the exponential part.
        alpha: f32,
        /// Overall scale.
        gamma: f32,
    },
    /// `ln(1 + e^x)`.
    Softplus,
    /// `x / (1 + |x|)`.
    Softsign,
    /// -1, 0 or 1 by the sign of `x`.
    Sign,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// Tangent.
    Tan,
    /// Arcsine (NaN outside [-1, 1]).
    Asin,
    /// Arccosine (NaN outside [-1, 1]).
    Acos,
    /// Arctangent.
    Atan,
    /// Hyperbolic sine.
    Sinh,
    /// Hyperbolic cosine.
    Cosh,
    /// Inverse hyperbolic sine.
    Asinh,
    /// Inverse hyperbolic cosine (NaN below 1).
    Acosh,
    /// Inverse hyperbolic tangent (NaN outside [-1, 1]).
    Atanh,
    /// `max(0, x) + min(0, alpha (e^(x/alpha) - 1))`.
    Celu {
        /// Scale (non-zero).
        alpha: f32,
    },
    /// `x > alpha ? x : 0`.
    ThresholdedRelu {
        /// Threshold.
        alpha: f32,
    },
    /// `x tanh(ln(1 + e^x))`.
    Mish,
    /// `x < -lambd ? x + bias : x > lambd ? x - bias : 0`.
    Shrink {
        /// Shift applied outside the dead zone.
        bias: f32,
        /// Half-width of the dead zone.
        lambd: f32,
    },
    /// `x sigmoid(alpha x)` (ONNX `Swish`; SiLU when `alpha` is 1).
    Swish {
        /// Scale inside the sigmoid.
        alpha: f32,
    },
    /// `HardSwish(x) * scale + offset`, rounded after each step: a HardSwish followed by a Mul and an
    /// Add by constants (PP-LCNet's learnable affine block), which the converter makes one op of.
    ScaledHardSwish {
        /// The factor.
        scale: f32,
        /// The term added last.
        offset: f32,
    },
}

impl UnaryOp {
    /// Short name, as shown by `ember inspect`.
    pub fn name(&self) -> &'static str {
        match self {
            UnaryOp::Relu => "Relu",
            UnaryOp::Relu6 => "Relu6",
            UnaryOp::Clip { .. } => "Clip",
            UnaryOp::Sigmoid => "Sigmoid",
            UnaryOp::Tanh => "Tanh",
            UnaryOp::Abs => "Abs",
            UnaryOp::Neg => "Neg",
            UnaryOp::Sqrt => "Sqrt",
            UnaryOp::Exp => "Exp",
            UnaryOp::Log => "Log",
            UnaryOp::Erf => "Erf",
            UnaryOp::Gelu => "Gelu",
            UnaryOp::GeluTanh => "Gelu(tanh)",
            UnaryOp::Floor => "Floor",
            UnaryOp::Ceil => "Ceil",
            UnaryOp::Round => "Round",
            UnaryOp::Reciprocal => "Reciprocal",
            UnaryOp::LeakyRelu { .. } => "LeakyRelu",
            UnaryOp::HardSigmoid { .. } => "HardSigmoid",
            UnaryOp::HardSwish => "HardSwish",
            UnaryOp::Elu { .. } => "Elu",
            UnaryOp::Selu { .. } => "Selu",
            UnaryOp::Softplus => "Softplus",
            UnaryOp::Softsign => "Softsign",
            UnaryOp::Sign => "Sign",
            UnaryOp::Sin => "Sin",
            UnaryOp::Cos => "Cos",
            UnaryOp::Tan => "Tan",
            UnaryOp::Asin => "Asin",
            UnaryOp::Acos => "Acos",
            UnaryOp::Atan => "Atan",
            UnaryOp::Sinh => "Sinh",
            UnaryOp::Cosh => "Cosh",
            UnaryOp::Asinh => "Asinh",
            UnaryOp::Acosh => "Acosh",
            UnaryOp::Atanh => "Atanh",
            UnaryOp::Celu { .. } => "Celu",
            UnaryOp::ThresholdedRelu { .. } => "ThresholdedRelu",
            UnaryOp::Mish => "Mish",
            UnaryOp::Shrink { .. } => "Shrink",
            UnaryOp::Swish { .. } => "Swish",
            UnaryOp::ScaledHardSwish { .. } => "ScaledHardSwish",
        }
    }
}

/// Parameters of a unary op.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnaryParams {
    /// The function.
    pub op: UnaryOp,
}

/// Parameters of a cast.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CastParams {
    /// The output dtype (also recorded in the output tensor).
    pub to: DType,
}

/// Which comparison. The variant index is in the blob: new variants go at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CompareOp {
    /// `a == b`.
    Equal,
    /// `a < b`.
    Less,
    /// `a <= b`.
    LessOrEqual,
    /// `a > b`.
    Greater,
    /// `a >= b`.
    GreaterOrEqual,
}

impl CompareOp {
    /// The ONNX op name.
    pub fn name(&self) -> &'static str {
        match self {
            CompareOp::Equal => "Equal",
            CompareOp::Less => "Less",
            CompareOp::LessOrEqual => "LessOrEqual",
            CompareOp::Greater => "Greater",
            CompareOp::GreaterOrEqual => "GreaterOrEqual",
        }
    }
}

/// Parameters of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CompareParams {
    /// The comparison.
    pub op: CompareOp,
}

/// Which logical function. The variant index is in the blob: new variants go at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LogicalOp {
    /// `a && b`.
    And,
    /// `a || b`.
    Or,
    /// `a != b`.
    Xor,
}

impl LogicalOp {
    /// The ONNX op name.
    pub fn name(&self) -> &'static str {
        match self {
            LogicalOp::And => "And",
            LogicalOp::Or => "Or",
            LogicalOp::Xor => "Xor",
        }
    }
}

/// Parameters of a binary logical op.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LogicalParams {
    /// The function.
    pub op: LogicalOp,
}
