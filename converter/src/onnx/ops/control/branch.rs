//! `If`: two branches, one run. A constant condition (the common case once shapes are static: a
//! branch on a dim) imports the branch taken in place; otherwise both are converted
//! ([`crate::ir::control::Branches`]) and the session runs the one the condition picks.

use super::{emit_control, subgraph};
use crate::ir::control::{Branches, Control};
use crate::ir::{ConstData, DType};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops;
use crate::ConvertError;

/// `If`: input `cond` (a one-element Bool); attributes `then_branch`, `else_branch` (graphs without
/// inputs, reading the enclosing graph's values), each giving the node's values.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let then = ctx.attr_graph("then_branch")?;
    let els = ctx.attr_graph("else_branch")?;
    let cond = ctx.input(0, "cond")?;
    if ctx.shape(cond).iter().product::<usize>() != 1 {
        return Err(ctx.err(format!(
            "its condition has shape {:?}; it must hold one value",
            ctx.shape(cond)
        )));
    }
    if let Some(data) = &ctx.graph().tensor(cond).data {
        let taken = match data {
            ConstData::I64(v) => v.first().is_some_and(|&x| x != 0),
            ConstData::F32(v) => v.first().is_some_and(|&x| x != 0.0),
        };
        return inline(ctx, if taken { then } else { els });
    }
    let then = subgraph::import(ctx, then, "then_branch", &[])?;
    let els = subgraph::import(ctx, els, "else_branch", &[])?;
    let n = ctx.node.output.len();
    if then.graph.outputs.len() != n || els.graph.outputs.len() != n {
        return Err(ctx.err(format!(
            "its branches give {} and {} values for its {n} outputs",
            then.graph.outputs.len(),
            els.graph.outputs.len()
        )));
    }
    let mut values: Vec<(Vec<usize>, DType)> = Vec::with_capacity(n);
    for (k, (&t, &e)) in then.graph.outputs.iter().zip(&els.graph.outputs).enumerate() {
        let (t, e) = (then.graph.tensor(t), els.graph.tensor(e));
        if t.shape != e.shape || t.dtype != e.dtype {
            return Err(ctx.err(format!(
                "output {k} is {} {:?} from then_branch and {} {:?} from else_branch; Ember's shapes \
                 are static, so both branches must give one shape and type",
                t.dtype.name(),
                t.shape,
                e.dtype.name(),
                e.shape
            )));
        }
        values.push((t.shape.clone(), t.dtype));
    }
    let (mut then, mut els) = (then, els);
    subgraph::optimize(ctx, &mut then.graph, "then_branch")?;
    subgraph::optimize(ctx, &mut els.graph, "else_branch")?;
    let mut inputs = vec![cond];
    inputs.extend(&then.captured);
    inputs.extend(&els.captured);
    let control = Control::If(Branches {
        then: then.graph,
        els: els.graph,
    });
    emit_control(ctx, control, inputs, &values)
}

/// Imports the branch taken into the enclosing graph, its values the node's.
fn inline(ctx: &mut NodeCtx<'_>, branch: &crate::onnx::proto::GraphProto) -> Result<(), ConvertError> {
    for init in &branch.initializer {
        let (shape, data, dtype) = crate::onnx::tensor::read_tensor_typed(init, &init.name)?;
        let id = ctx.imp.graph.add_constant_of(&init.name, shape, data, dtype);
        ctx.imp.values.insert(init.name.clone(), id);
    }
    for (index, node) in branch.node.iter().enumerate() {
        let name = if node.name.is_empty() {
            format!("{}/{}_{index}", ctx.name, node.op_type)
        } else {
            node.name.clone()
        };
        let opsets = ctx.imp.opsets.clone();
        let opset = ctx.opset;
        let mut node_ctx = NodeCtx::new(ctx.imp, node, name, opset);
        ops::import_node(&mut node_ctx, &opsets)?;
    }
    if branch.output.len() != ctx.node.output.len() {
        return Err(ctx.err(format!(
            "the branch taken gives {} values for its {} outputs",
            branch.output.len(),
            ctx.node.output.len()
        )));
    }
    for (k, vi) in branch.output.iter().enumerate() {
        let Some(&id) = ctx.imp.values.get(&vi.name) else {
            return Err(ctx.err(format!(
                "the branch's output \"{}\" is not produced by any of its nodes",
                vi.name
            )));
        };
        if let Some(name) = ctx.used_output(k).map(str::to_string) {
            ctx.imp.values.insert(name, id);
        }
    }
    Ok(())
}
