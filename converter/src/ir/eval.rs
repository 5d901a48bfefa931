//! Evaluation of multi-input ops on integer constants at conversion time: the arithmetic of shape
//! subgraphs (`Shape -> Gather -> Div(2) -> Concat -> Reshape`). Only ops with an INT64 input are
//! evaluated here; float constants keep their runtime op.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use super::shape::broadcast;
use super::slicing::broadcast_sources;
use super::{ConstData, Op};

/// The value of `op` on constant inputs `xs` (dims and data), when one of them is INT64 and the op is
/// one this evaluates: Add, Sub, Mul, Div (truncating), Min, Max, with numpy broadcasting. `None`
/// otherwise; `Err` for a division by zero.
pub fn eval_int(op: &Op, xs: &[(&[usize], &ConstData)]) -> Option<Result<ConstData, String>> {
    let [(a_dims, ConstData::I64(a)), (b_dims, ConstData::I64(b))] = xs else {
        return None;
    };
    let Op::Binary {
        op,
        act: Activation::None,
    } = op
    else {
        return None;
    };
    let f: fn(i64, i64) -> Option<i64> = match op {
        BinaryOp::Add => |u, v| Some(u.wrapping_add(v)),
        BinaryOp::Sub => |u, v| Some(u.wrapping_sub(v)),
        BinaryOp::Mul => |u, v| Some(u.wrapping_mul(v)),
        BinaryOp::Div => |u, v| u.checked_div(v),
        BinaryOp::Min => |u, v| Some(u.min(v)),
        BinaryOp::Max => |u, v| Some(u.max(v)),
        _ => return None,
    };
    let out = match broadcast(a_dims, b_dims) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let (ia, ib) = (
        broadcast_sources(a_dims, &out),
        broadcast_sources(b_dims, &out),
    );
    let values = ia
        .iter()
        .zip(&ib)
        .map(|(&i, &j)| f(a[i], b[j]).ok_or_else(|| "integer division by zero".to_string()))
        .collect::<Result<Vec<_>, _>>();
    Some(values.map(ConstData::I64))
}
