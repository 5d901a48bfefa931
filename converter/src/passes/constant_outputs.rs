//! Graph outputs that folded into constants (a `Shape`, a `ConstantOfShape`, a whole constant subgraph)
//! still have to be written by an op into the arena, where a caller reads outputs: each gets a copy
//! (a Reshape of the constant to its own dims) that takes over the output's name. Runs once, last.

use crate::ir::{Graph, Node, Op};
use crate::ConvertError;

/// Adds a copy for every constant graph output; returns whether there was one.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let mut changed = false;
    for k in 0..g.outputs.len() {
        let c = g.outputs[k];
        if !g.is_const(c) {
            continue;
        }
        let t = g.tensor(c).clone();
        let name = format!("{}.copy", t.name);
        let copy = g.add_activation_of(&name, t.shape.clone(), t.dtype);
        g.tensor_mut(copy).layout = t.layout;
        g.swap_names(c, copy);
        g.nodes.push(Node {
            name,
            onnx_op: "Constant".into(),
            op: Op::Reshape {
                shape: t.shape.clone(),
            },
            inputs: vec![c],
            output: copy,
        });
        for o in g.outputs.iter_mut().filter(|o| **o == c) {
            *o = copy;
        }
        changed = true;
    }
    Ok(changed)
}
