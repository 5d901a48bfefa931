//! Simplifies transposes: a Transpose of a Transpose's output becomes one Transpose of the first
//! input (a Reshape when the two cancel), and a Transpose that moves only size-1 dims becomes a
//! Reshape (the bytes do not move, so it is free).

use crate::ir::shape::{is_permutation, moves_only_unit_dims};
use crate::ir::{Graph, Op};
use crate::ConvertError;

/// Simplifies every transpose it can.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let producers = g.producers();
    let mut changed = false;
    for idx in 0..g.nodes.len() {
        let Op::Transpose { perm } = &g.nodes[idx].op else {
            continue;
        };
        let mut perm = perm.clone();
        let mut x = g.nodes[idx].inputs[0];
        if let Some(&p) = producers.get(&x) {
            if let Op::Transpose { perm: first } = &g.nodes[p].op {
                // Output dim i of the second is its input dim perm[i], which is dim first[perm[i]].
                perm = perm.iter().map(|&i| first[i]).collect();
                x = g.nodes[p].inputs[0];
                changed = true;
            }
        }
        if !is_permutation(&perm) {
            return Err(ConvertError::internal(format!(
                "composed transpose {perm:?} is not a permutation"
            )));
        }
        let node = &mut g.nodes[idx];
        node.inputs[0] = x;
        let dims = &g.tensors[x.0].shape;
        if moves_only_unit_dims(dims, &perm) {
            let shape = g.tensors[node.output.0].shape.clone();
            node.op = Op::Reshape { shape };
            changed = true;
        } else {
            node.op = Op::Transpose { perm };
        }
    }
    Ok(changed)
}
