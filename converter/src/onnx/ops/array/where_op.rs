//! ONNX `Where`. All-constant inputs are evaluated at conversion time, and a constant condition that is
//! all true or all false selects one input (broadcast to the output); anything else is a runtime
//! [`Op::Where`] (any dtype, bool condition).

use crate::ir::shape::broadcast;
use crate::ir::slicing::{broadcast_sources, pick};
use crate::ir::{ConstData, DType, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::shape::bind_constant_of;

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
    let cond: Option<Vec<bool>> = match &t.data {
        Some(ConstData::I64(v)) => Some(v.iter().map(|&b| b != 0).collect()),
        Some(ConstData::F32(v)) => Some(v.iter().map(|&b| b != 0.0).collect()),
        None => None,
    };
    if let Some(cond) = &cond {
        let g = ctx.graph();
        if let (Some(xd), Some(yd)) = (g.tensor(x).data.clone(), g.tensor(y).data.clone()) {
            let m = pick_bool(cond, &cs, &out);
            let xd = pick(&xd, &broadcast_sources(&xs, &out));
            let yd = pick(&yd, &broadcast_sources(&ys, &out));
            let data = match (xd, yd) {
                (ConstData::F32(a), ConstData::F32(b)) => ConstData::F32(select(&m, &a, &b)),
                (ConstData::I64(a), ConstData::I64(b)) => ConstData::I64(select(&m, &a, &b)),
                _ => return Err(ctx.err("X and Y have different types")),
            };
            let dtype = g.tensor(x).dtype;
            return bind_constant_of(ctx, out, data, dtype);
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
    }
    // A runtime select; a constant condition of another type is stored as bool.
    let c = if cond.is_some() && ctx.graph().tensor(c).dtype != DType::Bool {
        let data = cond
            .unwrap_or_default()
            .iter()
            .map(|&b| i64::from(b))
            .collect();
        ctx.imp.graph.add_constant_of(
            &format!("{}.condition", ctx.name),
            cs.clone(),
            ConstData::I64(data),
            DType::Bool,
        )
    } else {
        c
    };
    ctx.emit(Op::Where, vec![c, x, y])?;
    Ok(())
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
