//! Element-wise binary ops with numpy-style broadcasting: Add, Sub, Mul, Div, Pow, Min, Max, PRelu and
//! Mod, with a fused activation. Min and Max propagate NaN (numpy `minimum`/`maximum`, as ONNX does).

use serde::{Deserialize, Serialize};

use crate::ops::math::activation::{max_nan, min_nan, Activation};
use crate::ops::shape::{
    broadcast_strides, check_broadcast, check_dims, for_each_offset, right_align,
};
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
        BinaryOp::Add => broadcast_map(a, b, y, |u, v| act.apply(u + v)),
        BinaryOp::Sub => broadcast_map(a, b, y, |u, v| act.apply(u - v)),
        BinaryOp::Mul => broadcast_map(a, b, y, |u, v| act.apply(u * v)),
        BinaryOp::Div => broadcast_map(a, b, y, |u, v| act.apply(u / v)),
        BinaryOp::Pow => broadcast_map(a, b, y, |u, v| act.apply(libm::powf(u, v))),
        BinaryOp::Min => broadcast_map(a, b, y, |u, v| act.apply(min_nan(u, v))),
        BinaryOp::Max => broadcast_map(a, b, y, |u, v| act.apply(max_nan(u, v))),
        BinaryOp::PRelu => {
            broadcast_map(a, b, y, |u, v| act.apply(if u < 0.0 { v * u } else { u }))
        }
        BinaryOp::Mod => broadcast_map(a, b, y, |u, v| act.apply(libm::fmodf(u, v))),
    }
}

/// `y[i] = f(a[ia], b[ib])` where `ia` and `ib` are `i` broadcast into `a` and `b`.
///
/// Walks `y` row by row (a row runs along the last axis) with an odometer over the outer axes; within a
/// row, `a` and `b` advance by a fixed step (0 when they are broadcast along it).
#[inline(always)]
fn broadcast_map(a: In<'_>, b: In<'_>, y: Out<'_>, f: impl Fn(f32, f32) -> f32) {
    if a.dims == b.dims {
        // No broadcasting: y has this shape too.
        for ((out, &u), &v) in y.data.iter_mut().zip(a.data).zip(b.data) {
            *out = f(u, v);
        }
        return;
    }
    if y.data.is_empty() {
        return;
    }
    // A scalar output is walked as one row of one element.
    let rank = y.dims.len().max(1);
    let y_dims = right_align(y.dims, rank);
    let a_strides = broadcast_strides(&right_align(a.dims, rank)[..rank]);
    let b_strides = broadcast_strides(&right_align(b.dims, rank)[..rank]);
    let row_len = y_dims[rank - 1];
    let (a_step, b_step) = (a_strides[rank - 1], b_strides[rank - 1]);
    let mut rows = y.data.chunks_exact_mut(row_len);
    for_each_offset(
        &y_dims[..rank - 1],
        &[a_strides, b_strides],
        |[a_row, b_row]| {
            if let Some(row) = rows.next() {
                for (i, out) in row.iter_mut().enumerate() {
                    *out = f(a.data[a_row + i * a_step], b.data[b_row + i * b_step]);
                }
            }
        },
    );
}
