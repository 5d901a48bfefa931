//! ONNX `Softmax` and `LogSoftmax`. Opset >= 13 normalizes along one axis (default -1). Older opsets
//! flatten the input to 2-D at `axis` (default 1) and normalize each row: that is a Reshape (free, an
//! alias) to `[prod(dims[..axis]), prod(dims[axis..])]`, a last-axis op, and a Reshape back.

use crate::ir::shape::{numel, resolve_axis};
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Softmax` or `LogSoftmax`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let log = ctx.node.op_type == "LogSoftmax";
    let op = |axis| {
        if log {
            Op::LogSoftmax { axis }
        } else {
            Op::Softmax { axis }
        }
    };
    let x = ctx.input(0, "input")?;
    let shape = ctx.shape(x);
    let rank = shape.len();
    if rank == 0 {
        return Err(ctx.err(format!(
            "the input is a scalar; {} needs rank >= 1",
            ctx.node.op_type
        )));
    }
    let default_axis = if ctx.opset >= 13 { -1 } else { 1 };
    let axis_attr = ctx.attr_int("axis")?.unwrap_or(default_axis);
    let axis =
        resolve_axis(axis_attr, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    if ctx.opset >= 13 || axis == rank - 1 {
        ctx.emit(op(axis), vec![x])?;
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
    let soft = ctx.emit_tmp("softmax", op(1), vec![flat])?;
    ctx.emit(Op::Reshape { shape }, vec![soft])?;
    Ok(())
}
