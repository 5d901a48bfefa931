//! Element-wise binary ops with numpy-style broadcasting: Add, Sub, Mul, Div, Pow, Min, Max, PRelu and
//! Mod, with a fused activation. Min and Max propagate NaN (numpy `minimum`/`maximum`, as ONNX does).

use serde::{Deserialize, Serialize};

use crate::ops::math::activation::{max_nan, min_nan, Activation};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims};
use crate::ops::{In, Out};
use crate::Error;

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

/// Checks that `a` and `b` broadcast (numpy rules, right-aligned) to exactly `y`.
pub fn validate(_p: &BinaryParams, a: &[usize], b: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(a)?;
    check_dims(b)?;
    check_dims(y)?;
    check_broadcast(a, b, y)
}

/// `y = act(a op b)` with broadcasting.
pub fn binary(p: &BinaryParams, a: In<'_>, b: In<'_>, y: Out<'_>) {
    let act = p.act;
    match p.op {
        BinaryOp::Add => broadcast_zip(a, b, y, |u, v| act.apply(u + v)),
        BinaryOp::Sub => broadcast_zip(a, b, y, |u, v| act.apply(u - v)),
        BinaryOp::Mul => broadcast_zip(a, b, y, |u, v| act.apply(u * v)),
        BinaryOp::Div => broadcast_zip(a, b, y, |u, v| act.apply(u / v)),
        BinaryOp::Pow => broadcast_zip(a, b, y, |u, v| act.apply(libm::powf(u, v))),
        BinaryOp::Min => broadcast_zip(a, b, y, |u, v| act.apply(min_nan(u, v))),
        BinaryOp::Max => broadcast_zip(a, b, y, |u, v| act.apply(max_nan(u, v))),
        BinaryOp::PRelu => {
            broadcast_zip(a, b, y, |u, v| act.apply(if u < 0.0 { v * u } else { u }))
        }
        BinaryOp::Mod => broadcast_zip(a, b, y, |u, v| act.apply(libm::fmodf(u, v))),
        BinaryOp::FloorMod => broadcast_zip(a, b, y, |u, v| {
            let r = libm::fmodf(u, v);
            act.apply(if r != 0.0 && ((r < 0.0) != (v < 0.0)) {
                r + v
            } else {
                r
            })
        }),
    }
}
