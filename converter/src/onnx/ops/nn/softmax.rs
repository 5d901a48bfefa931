//! ONNX `Softmax`, `LogSoftmax` and `Hardmax`. Opset >= 13 computes along one axis (default -1). Older
//! opsets flatten the input to 2-D at `axis` (default 1) and compute along each row: that is a Reshape
//! (free, an alias) to `[prod(dims[..axis]), prod(dims[axis..])]`, a last-axis op, and a Reshape back.
//! Hardmax is the blob's own kind, carried as it is ([`Op::Core`]).

use ember_core::ops::nn::hardmax::SoftmaxParams;
use ember_core::OpKind;


use crate::ir::shape::{numel, resolve_axis};
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Softmax`, `LogSoftmax` or `Hardmax`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op_type = ctx.node.op_type.clone();
    let op = |axis: usize| -> Result<Op, String> {
        match op_type.as_str() {
        "LogSoftmax" => Ok(Op::LogSoftmax { axis }),
        "Hardmax" => {
            let axis = u8::try_from(axis).map_err(|_| format!("axis {axis} is too large"))?;
            Ok(Op::Core(OpKind::Hardmax(SoftmaxParams { axis })))
        }
        _ => Ok(Op::Softmax { axis }),
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
        let op = op(axis).map_err(|e| ctx.err(e))?;
        ctx.emit(op, vec![x])?;
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
    let row_op = op(1).map_err(|e| ctx.err(e))?;
    let soft = ctx.emit_tmp("softmax", row_op, vec![flat])?;
    ctx.emit(Op::Reshape { shape }, vec![soft])?;
    Ok(())
}
