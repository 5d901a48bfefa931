//! Removes nodes whose output is neither read by another node nor a graph output.

use std::collections::HashSet;

use crate::ir::{Graph, TensorId};
use crate::ConvertError;

/// Runs the pass until no dead node is left.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let mut changed = false;
    loop {
        let mut used: HashSet<TensorId> = g.outputs.iter().copied().collect();
        for n in &g.nodes {
            used.extend(n.inputs.iter().copied());
        }
        let before = g.nodes.len();
        g.nodes.retain(|n| used.contains(&n.output));
        if g.nodes.len() == before {
            return Ok(changed);
        }
        changed = true;
    }
}
