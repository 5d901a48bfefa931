//! ONNX `Concat` along one axis; a Concat of constants (the pieces of a shape) folds into a constant
//! as it is added (`ir::emit::add_node`).

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Concat`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    // The op table admits one input or more.
    let n = ctx.node.input.len();
    let inputs = (0..n)
        .map(|i| ctx.input(i, "inputs"))
        .collect::<Result<Vec<_>, _>>()?;
    let rank = ctx.shape(inputs[0]).len();
    let axis_attr = ctx
        .attr_int("axis")?
        .ok_or_else(|| ctx.err("attribute axis is required"))?;
    let axis =
        resolve_axis(axis_attr, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    ctx.emit(Op::Concat { axis }, inputs)?;
    Ok(())
}
