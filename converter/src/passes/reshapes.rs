//! Collapses Reshape chains: a Reshape of a Reshape's output reads the first one's input instead.

use crate::ir::{Graph, Op};
use crate::ConvertError;

/// Collapses every chain link it finds.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let producers = g.producers();
    let mut changed = false;
    for idx in 0..g.nodes.len() {
        if !matches!(g.nodes[idx].op, Op::Reshape { .. }) {
            continue;
        }
        let x = g.nodes[idx].inputs[0];
        let Some(&p) = producers.get(&x) else {
            continue;
        };
        if matches!(g.nodes[p].op, Op::Reshape { .. }) {
            g.nodes[idx].inputs[0] = g.nodes[p].inputs[0];
            changed = true;
        }
    }
    Ok(changed)
}
