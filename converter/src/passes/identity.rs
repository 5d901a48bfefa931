//! Removes Reshapes that keep the shape (imported Identity and Dropout, cancelled transposes).
//!
//! Readers of the output read the input instead. When the output is a graph output, the producer of
//! the input writes the graph output directly; when that is impossible (the input is a graph input,
//! another graph output, or a constant) the node stays, and the planner makes it a copy.

use std::collections::HashMap;

use crate::ir::{Graph, Op, TensorId};
use crate::ConvertError;

/// Removes every identity it can in one walk.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let producers = g.producers();
    // Readers of a key read its value instead (values are final: chains are resolved on insert).
    let mut replace: HashMap<TensorId, TensorId> = HashMap::new();
    // (identity index, producer index) pairs where the producer takes over a graph output.
    let mut retarget: Vec<(usize, usize)> = Vec::new();
    let mut removed = vec![false; g.nodes.len()];
    for (idx, gone) in removed.iter_mut().enumerate() {
        for i in &mut g.nodes[idx].inputs {
            if let Some(&r) = replace.get(i) {
                *i = r;
            }
        }
        let n = &g.nodes[idx];
        let Op::Reshape { shape } = &n.op else {
            continue;
        };
        let (x, y) = (n.inputs[0], n.output);
        if g.tensor(x).shape != *shape {
            continue;
        }
        if !g.is_kept(y) {
            replace.insert(y, x);
            *gone = true;
        } else if retarget.is_empty() && !g.is_kept(x) {
            if let Some(&p) = producers.get(&x) {
                retarget.push((idx, p));
            }
        }
    }
    // At most one producer takes over a graph output per walk; the fixed point does the rest.
    let changed = !replace.is_empty() || !retarget.is_empty();
    for (idx, p) in retarget {
        let (x, y) = (g.nodes[idx].inputs[0], g.nodes[idx].output);
        removed[idx] = true;
        g.nodes[p].output = y;
        g.replace_node_inputs(x, y);
        let layout = g.tensor(x).layout;
        g.tensor_mut(y).layout = layout;
    }
    let mut keep = removed.iter().map(|r| !r);
    g.nodes.retain(|_| keep.next().unwrap_or(true));
    Ok(changed)
}
