//! Element-wise binary ops with numpy-style broadcasting: Add, Sub, Mul, Div, Pow, Min, Max, PRelu and
//! Mod, with a fused activation. Min and Max propagate NaN (numpy `minimum`/`maximum`, as ONNX does).

pub use crate::schema::{BinaryOp, BinaryParams};

use crate::ops::math::activation::{max_nan, min_nan};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims};
use crate::ops::{In, Out};
use crate::Error;

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
