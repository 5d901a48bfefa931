//! Control flow: `Loop`, `Scan` and `If` ([`crate::ir::control`]). Each sub-graph is imported as a
//! graph of its own ([`subgraph`]), with static shapes from the values the node hands it, and run
//! through the graph passes; the node becomes one [`Op::Control`](crate::ir::Op::Control) node and a
//! [`Op::ControlOutput`](crate::ir::Op::ControlOutput) per value. An `If` whose condition is a constant
//! is not control flow at all: the branch taken is imported in place.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/onnx/ops/control");

use std::sync::Arc;

use crate::ir::control::Control;
use crate::ir::{Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Emits the control node over `inputs`, then one value per used output of the ONNX node, shaped as
/// `values` says (by output index).
fn emit_control(
    ctx: &mut NodeCtx<'_>,
    control: Control,
    inputs: Vec<TensorId>,
    values: &[(Vec<usize>, crate::ir::DType)],
) -> Result<(), ConvertError> {
    let token = ctx.emit_tmp("token", Op::Control(Arc::new(control)), inputs)?;
    // The control node carries the ONNX node's name (its ops are named after it).
    let name = ctx.name.clone();
    if let Some(n) = ctx
        .imp
        .graph
        .nodes
        .iter_mut()
        .rev()
        .find(|n| n.output == token)
    {
        n.name = name;
    }
    for (index, (shape, dtype)) in values.iter().enumerate() {
        if ctx.used_output(index).is_none() {
            continue;
        }
        ctx.emit_output(
            index,
            Op::ControlOutput {
                index,
                shape: shape.clone(),
                dtype: *dtype,
            },
            vec![token],
        )?;
    }
    Ok(())
}
