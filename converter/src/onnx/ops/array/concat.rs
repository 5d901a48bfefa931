//! ONNX `Concat` along one axis; a Concat of constants (the pieces of a shape) is evaluated at
//! conversion time.

use crate::ir::shape::resolve_axis;
use crate::ir::slicing::concat;
use crate::ir::{ConstData, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::shape::bind_constant;

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
    if inputs.iter().all(|&i| ctx.graph().is_const(i)) {
        return fold(ctx, &inputs, axis);
    }
    ctx.emit(Op::Concat { axis }, inputs)?;
    Ok(())
}

/// Concat of constants (e.g. the pieces of a shape): a constant at conversion time.
fn fold(ctx: &mut NodeCtx<'_>, inputs: &[TensorId], axis: usize) -> Result<(), ConvertError> {
    let shapes: Vec<&[usize]> = inputs
        .iter()
        .map(|&i| ctx.graph().tensor(i).shape.as_slice())
        .collect();
    let shape = Op::Concat { axis }.infer(&shapes).map_err(|e| ctx.err(e))?;
    let parts: Vec<(&[usize], &ConstData)> = inputs
        .iter()
        .filter_map(|&i| {
            let t = ctx.graph().tensor(i);
            t.data.as_ref().map(|d| (t.shape.as_slice(), d))
        })
        .collect();
    let data = concat(&parts, axis).map_err(|e| ctx.err(e))?;
    bind_constant(ctx, shape, data)
}
