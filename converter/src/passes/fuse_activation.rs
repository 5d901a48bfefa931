//! Fuses Relu, Relu6 and Clip into the Conv2d, FullyConnected or Binary op that produces their input,
//! when nothing else reads that input. The fused node is named `producer+activation`.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::unary::UnaryOp;

use crate::ir::{Graph, Op};
use crate::ConvertError;

/// Fuses every activation it can in one walk.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let producers = g.producers();
    let uses = g.use_counts();
    let mut removed = vec![false; g.nodes.len()];
    for idx in 0..g.nodes.len() {
        let n = &g.nodes[idx];
        let act = match n.op {
            Op::Unary(UnaryOp::Relu) => Activation::Relu,
            Op::Unary(UnaryOp::Relu6) => Activation::Relu6,
            Op::Unary(UnaryOp::Clip { min, max }) => Activation::Clip { min, max },
            _ => continue,
        };
        let (x, y) = (n.inputs[0], n.output);
        if g.is_output(x) || uses.get(&x) != Some(&1) {
            continue;
        }
        // A removed producer is an activation that was itself fused; its output moved on.
        let Some(&p) = producers.get(&x).filter(|&&p| !removed[p]) else {
            continue;
        };
        let name = format!("{}+{}", g.nodes[p].name, g.nodes[idx].name);
        let producer = &mut g.nodes[p];
        match producer.op.activation_mut() {
            Some(a) if *a == Activation::None => *a = act,
            _ => continue,
        }
        producer.output = y;
        producer.name = name;
        removed[idx] = true;
    }
    let changed = removed.iter().any(|&r| r);
    let mut keep = removed.iter().map(|r| !r);
    g.nodes.retain(|_| keep.next().unwrap_or(true));
    Ok(changed)
}
