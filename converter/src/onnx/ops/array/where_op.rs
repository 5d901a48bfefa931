//! ONNX `Where`. A constant condition that is all true or all false selects one input (broadcast to
//! the output); anything else is a runtime [`Op::Where`] (any dtype, bool condition), which folds into a
//! constant as it is added when every input is constant (`ir::emit::add_node`).

use crate::ir::shape::broadcast;
use crate::ir::{ConstData, DType, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

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
