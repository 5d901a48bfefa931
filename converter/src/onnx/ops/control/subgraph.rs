//! Importing a control-flow op's sub-graph (a loop's body, a branch) as a graph of its own.
//!
//! The sub-graph's declared inputs get the static shapes and dtypes the node hands them. A name it
//! reads from an enclosing graph (ONNX lets a body read every value in scope) becomes a constant when
//! that value is one, and otherwise an extra input of the sub-graph, which the node then reads from the
//! outer graph: the captured values.

use std::collections::{HashMap, HashSet};

use crate::ir::{DType, Graph, TensorId};
use crate::onnx::node::{Importer, NodeCtx};
use crate::onnx::proto::GraphProto;
use crate::onnx::{ops, tensor};
use crate::ConvertError;

/// A sub-graph imported on its own.
pub struct Imported {
    /// The graph, after the graph passes: its inputs are the declared ones, then the captured ones.
    pub graph: Graph,
    /// The outer values the captured inputs stand for, in the order of those inputs.
    pub captured: Vec<TensorId>,
}

/// The names `g` reads from enclosing graphs: read by its nodes (or by their own sub-graphs) and
/// defined neither as its inputs, its initializers nor its nodes' outputs. In order of first read.
pub fn free_names(g: &GraphProto) -> Vec<String> {
    let mut defined: HashSet<&str> = HashSet::new();
    defined.extend(g.input.iter().map(|v| v.name.as_str()));
    defined.extend(g.initializer.iter().map(|t| t.name.as_str()));
    defined.extend(g.node.iter().flat_map(|n| n.output.iter().map(String::as_str)));
    let mut free: Vec<String> = Vec::new();
    let note = |name: &str, free: &mut Vec<String>| {
        if !name.is_empty() && !defined.contains(name) && !free.iter().any(|f| f == name) {
            free.push(name.to_string());
        }
    };
    for n in &g.node {
        for i in &n.input {
            note(i, &mut free);
        }
        for a in &n.attribute {
            if let Some(sub) = &a.g {
                for name in free_names(sub) {
                    note(&name, &mut free);
                }
            }
        }
    }
    free
}

/// Imports `sub` (an attribute of the node of `ctx`) with its declared inputs shaped and typed as
/// `formal` says, then runs the graph passes over it. `what` names it in errors (`body`,
/// `then_branch`).
pub fn import(
    ctx: &mut NodeCtx<'_>,
    sub: &GraphProto,
    what: &str,
    formal: &[(Vec<usize>, DType)],
) -> Result<Imported, ConvertError> {
    if sub.input.len() != formal.len() {
        return Err(ctx.err(format!(
            "its {what} declares {} inputs; the op hands it {}",
            sub.input.len(),
            formal.len()
        )));
    }
    let mut imp = Importer {
        graph: Graph::new(ctx.opset),
        values: HashMap::new(),
        unavailable: HashMap::new(),
        notices: Vec::new(),
        max_counts: ctx.imp.max_counts.clone(),
        max_trips: ctx.imp.max_trips.clone(),
        opsets: ctx.imp.opsets.clone(),
    };
    for init in &sub.initializer {
        let (shape, data, dtype) = tensor::read_tensor_typed(init, &init.name)?;
        let id = imp.graph.add_constant_of(&init.name, shape, data, dtype);
        imp.values.insert(init.name.clone(), id);
    }
    for (vi, (shape, dtype)) in sub.input.iter().zip(formal) {
        let id = imp.graph.add_activation_of(&vi.name, shape.clone(), *dtype);
        imp.graph.inputs.push(id);
        imp.values.insert(vi.name.clone(), id);
    }
    let mut captured = Vec::new();
    for name in free_names(sub) {
        if imp.values.contains_key(&name) {
            continue;
        }
        let Some(&outer) = ctx.imp.values.get(&name) else {
            return Err(ctx.err(match ctx.imp.unavailable.get(&name) {
                Some(why) => format!("its {what} reads \"{name}\", which {why}"),
                None => format!(
                    "its {what} reads \"{name}\", which no enclosing graph defines before the node"
                ),
            }));
        };
        let t = ctx.imp.graph.tensor(outer).clone();
        let id = match t.data {
            Some(data) => imp.graph.add_constant_of(&name, t.shape, data, t.dtype),
            None => {
                let id = imp.graph.add_activation_of(&name, t.shape, t.dtype);
                imp.graph.inputs.push(id);
                captured.push(outer);
                id
            }
        };
        imp.values.insert(name, id);
    }
    for (index, node) in sub.node.iter().enumerate() {
        let name = if node.name.is_empty() {
            format!("{}/{}_{index}", ctx.name, node.op_type)
        } else {
            node.name.clone()
        };
        let opsets = imp.opsets.clone();
        let mut node_ctx = NodeCtx::new(&mut imp, node, name, ctx.opset);
        ops::import_node(&mut node_ctx, &opsets)?;
    }
    for vi in &sub.output {
        let Some(&id) = imp.values.get(&vi.name) else {
            return Err(ctx.err(format!(
                "its {what}'s output \"{}\" {}",
                vi.name,
                imp.unavailable
                    .get(&vi.name)
                    .cloned()
                    .unwrap_or_else(|| "is not produced by any of its nodes".to_string())
            )));
        };
        imp.graph.outputs.push(id);
    }
    ctx.imp.notices.append(&mut imp.notices);
    Ok(Imported {
        graph: imp.graph,
        captured,
    })
}

/// Runs the graph passes over an imported sub-graph.
pub fn optimize(ctx: &NodeCtx<'_>, g: &mut Graph, what: &str) -> Result<(), ConvertError> {
    crate::passes::run(g)
        .map(|_| ())
        .map_err(|e| ctx.err(format!("its {what}: {e}")))
}
