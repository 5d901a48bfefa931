//! ONNX `ArgMax` and `ArgMin` (attributes `axis` default 0, `keepdims` default 1, `select_last_index`
//! default 0) to [`Op::ArgReduce`], whose output is INT64.

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `ArgMax` or `ArgMin`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let max = ctx.node.op_type == "ArgMax";
    let x = ctx.input(0, "data")?;
    let rank = ctx.shape(x).len();
    let axis = ctx.attr_int("axis")?.unwrap_or(0);
    let axis = resolve_axis(axis, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    let keepdims = ctx.attr_int("keepdims")?.unwrap_or(1) != 0;
    let select_last_index = ctx.attr_int("select_last_index")?.unwrap_or(0) != 0;
    ctx.emit(
        Op::ArgReduce {
            max,
            axis,
            keepdims,
            select_last_index,
        },
        vec![x],
    )?;
    Ok(())
}
