//! ONNX `Softmax`. Opset >= 13 normalizes along one axis (default -1). Older opsets flatten the input
//! to 2-D at `axis` (default 1) and normalize each row: that is a Reshape (free, an alias) to
//! `[prod(dims[..axis]), prod(dims[axis..])]`, a last-axis Softmax, and a Reshape back.

use crate::ir::shape::{numel, resolve_axis};
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Softmax`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let shape = ctx.shape(x);
    let rank = shape.len();
    if rank == 0 {
        return Err(ctx.err("the input is a scalar; Softmax needs rank >= 1"));
    }
    let default_axis = if ctx.opset >= 13 { -1 } else { 1 };
    let axis_attr = ctx.attr_int("axis")?.unwrap_or(default_axis);
    let axis =
        resolve_axis(axis_attr, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    if ctx.opset >= 13 || axis == rank - 1 {
        ctx.emit(Op::Softmax { axis }, vec![x])?;
        return Ok(());
    }
    let rows = numel(&shape[..axis]).map_err(|e| ctx.err(e))?;
    let cols = numel(&shape[axis..]).map_err(|e| ctx.err(e))?;
    let flat = ctx.emit_tmp(
        "flatten",
        Op::Reshape {
            shape: vec![rows, cols],
        },
        vec![x],
    )?;
    let soft = ctx.emit_tmp("softmax", Op::Softmax { axis: 1 }, vec![flat])?;
    ctx.emit(Op::Reshape { shape }, vec![soft])?;
    Ok(())
}
