//! Fuses Relu, Relu6 and Clip into the Conv2d, FullyConnected or Binary op that produces their input,
//! when nothing else reads that input, also through a Reshape in between (whose input nothing else
//! reads either). The fused node is named `producer+activation`.

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
        if g.is_kept(x) || uses.get(&x) != Some(&1) {
            continue;
        }
        // A removed producer is an activation that was itself fused; its output moved on.
        let Some(&p) = producers.get(&x).filter(|&&p| !removed[p]) else {
            continue;
        };
        // Through a Reshape whose input has no other reader (an element-wise activation commutes
        // with it): `conv -> reshape -> relu` becomes `conv+relu -> reshape`, e.g. a 1-D Conv.
        let (p, through) = match &g.nodes[p].op {
            Op::Reshape { .. } => {
                let r = g.nodes[p].inputs[0];
                if g.is_kept(r) || uses.get(&r) != Some(&1) {
                    continue;
                }
                match producers.get(&r).filter(|&&q| !removed[q]) {
                    Some(&q) => (q, Some(p)),
                    None => continue,
                }
            }
            _ => (p, None),
        };
        let name = format!("{}+{}", g.nodes[p].name, g.nodes[idx].name);
        let producer = &mut g.nodes[p];
        match producer.op.activation_mut() {
            Some(a) if *a == Activation::None => *a = act,
            _ => continue,
        }
        producer.name = name;
        match through {
            Some(r) => g.nodes[r].output = y,
            None => producer.output = y,
        }
        removed[idx] = true;
    }
    let changed = removed.iter().any(|&r| r);
    let mut keep = removed.iter().map(|r| !r);
    g.nodes.retain(|_| keep.next().unwrap_or(true));
    Ok(changed)
}
