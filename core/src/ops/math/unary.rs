//! Element-wise unary ops: Relu, Relu6, Clip, Sigmoid, Tanh.

use serde::{Deserialize, Serialize};

use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// Which unary function to apply.
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
}

/// Parameters of a unary op.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnaryParams {
    /// The function.
    pub op: UnaryOp,
}

/// Checks that `y` has the shape of `x`. Any `Clip` bounds are accepted: when `min > max` every output is
/// `max`, as in ONNX.
pub fn validate(_p: &UnaryParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(x == y, "unary output shape differs from input")
}

/// `y = op(x)` element-wise.
pub fn unary(p: &UnaryParams, x: In<'_>, y: Out<'_>) {
    match p.op {
        UnaryOp::Relu => map(x.data, y.data, |v| v.max(0.0)),
        UnaryOp::Relu6 => map(x.data, y.data, |v| v.clamp(0.0, 6.0)),
        // Max then min (not `clamp`), so that min > max cannot panic.
        UnaryOp::Clip { min, max } => map(x.data, y.data, |v| v.max(min).min(max)),
        UnaryOp::Sigmoid => map(x.data, y.data, |v| 1.0 / (1.0 + libm::expf(-v))),
        UnaryOp::Tanh => map(x.data, y.data, libm::tanhf),
    }
}

/// `y[i] = f(x[i])`, with the op chosen once outside the loop.
#[inline(always)]
fn map(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    for (out, &v) in y.iter_mut().zip(x) {
        *out = f(v);
    }
}
