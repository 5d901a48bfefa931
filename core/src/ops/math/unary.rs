//! Element-wise unary ops: activations (Relu, Sigmoid, Gelu, Elu, ...), rounding, and the elementary
//! functions (Sqrt, Exp, Log, Erf, trigonometric and hyperbolic functions), in f32 through `libm`.
//!
//! NaN passes through every op (as in ONNX and onnxruntime), and each op follows ONNX's definition at
//! the edges: `Round` rounds half to even, `Sign(0)` is 0, `Clip` with `min > max` gives `max`.

use serde::{Deserialize, Serialize};

use crate::ops::math::activation::{clip, relu};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

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

/// Checks that `y` has the shape of `x`. Any parameter values are accepted: every function is defined
/// for all of them (`Clip` with `min > max` gives `max`, as in ONNX; `Celu` with `alpha = 0` gives NaN
/// below 0, as its formula does).
pub fn validate(_p: &UnaryParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(x == y, "unary output shape differs from input")
}

/// `y = op(x)` element-wise.
pub fn unary(p: &UnaryParams, x: In<'_>, y: Out<'_>) {
    let (x, y) = (x.data, y.data);
    match p.op {
        UnaryOp::Relu => map(x, y, relu),
        UnaryOp::Relu6 => map(x, y, |v| clip(v, 0.0, 6.0)),
        UnaryOp::Clip { min, max } => map(x, y, |v| clip(v, min, max)),
        UnaryOp::Sigmoid => map(x, y, |v| 1.0 / (1.0 + libm::expf(-v))),
        UnaryOp::Tanh => map(x, y, libm::tanhf),
        UnaryOp::Abs => map(x, y, libm::fabsf),
        UnaryOp::Neg => map(x, y, |v| -v),
        UnaryOp::Sqrt => map(x, y, libm::sqrtf),
        UnaryOp::Exp => map(x, y, libm::expf),
        UnaryOp::Log => map(x, y, libm::logf),
        UnaryOp::Erf => map(x, y, libm::erff),
        UnaryOp::Gelu => map(x, y, |v| {
            0.5 * v * (1.0 + libm::erff(v * core::f32::consts::FRAC_1_SQRT_2))
        }),
        UnaryOp::GeluTanh => map(x, y, gelu_tanh),
        UnaryOp::Floor => map(x, y, libm::floorf),
        UnaryOp::Ceil => map(x, y, libm::ceilf),
        // `rintf` rounds to nearest, ties to even, in the default rounding mode (the only one in Rust).
        UnaryOp::Round => map(x, y, libm::rintf),
        UnaryOp::Reciprocal => map(x, y, |v| 1.0 / v),
        UnaryOp::LeakyRelu { alpha } => map(x, y, |v| if v < 0.0 { alpha * v } else { v }),
        UnaryOp::HardSigmoid { alpha, beta } => map(x, y, |v| clip(alpha * v + beta, 0.0, 1.0)),
        UnaryOp::HardSwish => map(x, y, |v| v * clip(v / 6.0 + 0.5, 0.0, 1.0)),
        UnaryOp::Elu { alpha } => map(x, y, |v| if v < 0.0 { alpha * libm::expm1f(v) } else { v }),
        UnaryOp::Selu { alpha, gamma } => map(x, y, |v| {
            if v <= 0.0 {
                gamma * alpha * libm::expm1f(v)
            } else {
                gamma * v
            }
        }),
        UnaryOp::Softplus => map(x, y, softplus),
        UnaryOp::Softsign => map(x, y, |v| v / (1.0 + libm::fabsf(v))),
        // 0, -0 and NaN are their own sign.
        UnaryOp::Sign => map(x, y, |v| {
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        }),
        UnaryOp::Sin => map(x, y, libm::sinf),
        UnaryOp::Cos => map(x, y, libm::cosf),
        UnaryOp::Tan => map(x, y, libm::tanf),
        UnaryOp::Asin => map(x, y, libm::asinf),
        UnaryOp::Acos => map(x, y, libm::acosf),
        UnaryOp::Atan => map(x, y, libm::atanf),
        UnaryOp::Sinh => map(x, y, libm::sinhf),
        UnaryOp::Cosh => map(x, y, libm::coshf),
        UnaryOp::Asinh => map(x, y, libm::asinhf),
        UnaryOp::Acosh => map(x, y, libm::acoshf),
        UnaryOp::Atanh => map(x, y, libm::atanhf),
        UnaryOp::Celu { alpha } => map(x, y, |v| {
            if v < 0.0 {
                alpha * libm::expm1f(v / alpha)
            } else {
                v
            }
        }),
        UnaryOp::ThresholdedRelu { alpha } => {
            map(x, y, |v| if v > alpha || v.is_nan() { v } else { 0.0 })
        }
        UnaryOp::Mish => map(x, y, |v| v * libm::tanhf(softplus(v))),
        UnaryOp::Shrink { bias, lambd } => map(x, y, |v| {
            if v < -lambd {
                v + bias
            } else if v > lambd {
                v - bias
            } else if v.is_nan() {
                v
            } else {
                0.0
            }
        }),
        UnaryOp::Swish { alpha } => map(x, y, |v| v / (1.0 + libm::expf(-alpha * v))),
        UnaryOp::ScaledHardSwish { scale, offset } => {
            map(x, y, |v| v * clip(v / 6.0 + 0.5, 0.0, 1.0) * scale + offset)
        }
    }
}

/// `ln(1 + e^x)` without overflow for large `x`.
#[inline(always)]
fn softplus(v: f32) -> f32 {
    if v > 0.0 {
        v + libm::log1pf(libm::expf(-v))
    } else {
        libm::log1pf(libm::expf(v))
    }
}

/// Gelu's tanh approximation.
#[inline(always)]
fn gelu_tanh(v: f32) -> f32 {
    // sqrt(2 / pi).
    const K: f32 = 0.797_884_6;
    0.5 * v * (1.0 + libm::tanhf(K * (v + 0.044_715 * v * v * v)))
}

/// `y[i] = f(x[i])`, with the op chosen once outside the loop.
#[inline(always)]
fn map(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    for (out, &v) in y.iter_mut().zip(x) {
        *out = f(v);
    }
}
