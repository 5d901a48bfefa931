//! ONNX `Where` with a constant condition. All-constant inputs are evaluated at conversion time; a
//! condition that is all true or all false selects one input (broadcast to the output); otherwise the
//! select becomes arithmetic with constant masks: `x * m + where(m, 0, y)` when `y` is constant (so a
//! `-inf` fill stays exact), `y * (1 - m) + where(m, x, 0)` when `x` is, and `x * m + y * (1 - m)` when
//! both are runtime values (there a non-finite value in the unselected input leaks in as NaN).
//! A runtime condition is unsupported (Ember has no boolean tensors at run time).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use crate::ir::shape::broadcast;
use crate::ir::slicing::{broadcast_sources, pick};
use crate::ir::{ConstData, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::shape::bind_constant;

/// Imports `Where`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let c = ctx.input(0, "condition")?;
    let x = ctx.input(1, "X")?;
    let y = ctx.input(2, "Y")?;
    let (cs, xs, ys) = (ctx.shape(c), ctx.shape(x), ctx.shape(y));
    let out = broadcast(&cs, &xs)
        .and_then(|s| broadcast(&s, &ys))
        .map_err(|e| ctx.err(e))?;
    crate::ir::shape::numel(&out).map_err(|e| ctx.err(e))?;
    let t = ctx.graph().tensor(c);
    let cond: Vec<bool> = match &t.data {
        Some(ConstData::I64(v)) => v.iter().map(|&b| b != 0).collect(),
        Some(ConstData::F32(v)) => v.iter().map(|&b| b != 0.0).collect(),
        None => {
            return Err(ctx.err(format!(
                "the condition (\"{}\") is a runtime value; Ember supports Where with a constant \
                 condition only",
                t.name
            )))
        }
    };
    let g = ctx.graph();
    if let (Some(xd), Some(yd)) = (g.tensor(x).data.clone(), g.tensor(y).data.clone()) {
        let m = pick_bool(&cond, &cs, &out);
        let xd = pick(&xd, &broadcast_sources(&xs, &out));
        let yd = pick(&yd, &broadcast_sources(&ys, &out));
        let data = match (xd, yd) {
            (ConstData::F32(a), ConstData::F32(b)) => ConstData::F32(select(&m, &a, &b)),
            (ConstData::I64(a), ConstData::I64(b)) => ConstData::I64(select(&m, &a, &b)),
            _ => return Err(ctx.err("X and Y have different types")),
        };
        return bind_constant(ctx, out, data);
    }
    if cond.iter().all(|&b| b) || cond.iter().all(|&b| !b) {
        let (v, vs) = if cond.first().copied().unwrap_or(true) {
            (x, xs)
        } else {
            (y, ys)
        };
        let op = if vs == out {
            Op::Reshape { shape: out }
        } else {
            Op::Broadcast { shape: out }
        };
        ctx.emit(op, vec![v])?;
        return Ok(());
    }
    let mask = |ctx: &mut NodeCtx<'_>, invert: bool| {
        let data = cond
            .iter()
            .map(|&b| f32::from(u8::from(b != invert)))
            .collect();
        ctx.add_constant(
            if invert { "not_mask" } else { "mask" },
            cs.clone(),
            ConstData::F32(data),
        )
    };
    // The constant input with the unselected places zeroed, at the broadcast of its and the mask's dims.
    let kept = |ctx: &mut NodeCtx<'_>, v: TensorId, vs: &[usize], keep: bool| {
        let shape = broadcast(&cs, vs).map_err(|e| ctx.err(e))?;
        let m = pick_bool(&cond, &cs, &shape);
        let Some(ConstData::F32(d)) = ctx.graph().tensor(v).data.clone() else {
            return Err(ctx.err("X and Y must be FLOAT"));
        };
        let d: Vec<f32> = broadcast_sources(vs, &shape)
            .iter()
            .map(|&i| d[i])
            .collect();
        let zeroed = m
            .iter()
            .zip(d)
            .map(|(&s, v)| if s == keep { v } else { 0.0 })
            .collect();
        Ok(ctx.add_constant("kept", shape, ConstData::F32(zeroed)))
    };
    let mul = Op::Binary {
        op: BinaryOp::Mul,
        act: Activation::None,
    };
    let add = Op::Binary {
        op: BinaryOp::Add,
        act: Activation::None,
    };
    let (x_const, y_const) = (ctx.graph().is_const(x), ctx.graph().is_const(y));
    let (a, b) = if y_const {
        let m = mask(ctx, false);
        let a = ctx.emit_tmp("x_masked", mul, vec![x, m])?;
        (a, kept(ctx, y, &ys, false)?)
    } else if x_const {
        let m = mask(ctx, true);
        let a = ctx.emit_tmp("y_masked", mul, vec![y, m])?;
        (a, kept(ctx, x, &xs, true)?)
    } else {
        let (m, n) = (mask(ctx, false), mask(ctx, true));
        let a = ctx.emit_tmp("x_masked", mul.clone(), vec![x, m])?;
        let b = ctx.emit_tmp("y_masked", mul, vec![y, n])?;
        (a, b)
    };
    let sum = ctx.emit_tmp("sum", add, vec![a, b])?;
    // The sum has the output's dims unless every input was smaller; broadcast the rest of the way.
    if ctx.shape(sum) == out {
        ctx.finish(sum)
    } else {
        ctx.emit(Op::Broadcast { shape: out }, vec![sum])?;
        Ok(())
    }
}

/// The condition broadcast from `from` to `to`.
fn pick_bool(cond: &[bool], from: &[usize], to: &[usize]) -> Vec<bool> {
    broadcast_sources(from, to)
        .iter()
        .map(|&i| cond[i])
        .collect()
}

fn select<T: Copy>(m: &[bool], a: &[T], b: &[T]) -> Vec<T> {
    m.iter()
        .zip(a.iter().zip(b))
        .map(|(&s, (&u, &v))| if s { u } else { v })
        .collect()
}
