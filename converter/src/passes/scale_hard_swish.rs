//! Folds multiplications and additions by one-element constants that follow a HardSwish into it
//! ([`UnaryOp::ScaledHardSwish`]: `HardSwish(x) * scale + offset`): PP-LCNet's learnable affine
//! block after each HardSwish, which [`super::fold_affine`] cannot fold into the next layer when that
//! layer pads its input (the padding would then be `offset`, not zero). Three passes over a feature map
//! become one.
//!
//! A Mul by `c` makes `scale * c` and `offset * c`, an Add of `c` makes `offset + c`, and `x - c` makes
//! `offset - c`. For the usual chain (one Mul, then one Add or Sub) the op rounds exactly as the
//! separate ops do (the product, then the sum); longer chains differ from them by rounding only. Each
//! intermediate result must have no other reader, and the shape must not change (a constant of higher
//! rank would broadcast the result).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;

use crate::ir::{Graph, Op, TensorId};
use crate::ConvertError;

/// Folds every such chain in one walk.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let uses = g.use_counts();
    let mut reader = std::collections::HashMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        for &t in &n.inputs {
            reader.insert(t, i);
        }
    }
    let private = |t: TensorId| !g.is_kept(t) && uses.get(&t) == Some(&1);
    let mut remove = vec![false; g.nodes.len()];
    // (the HardSwish node, its new op, its new output, the folded nodes)
    let mut found = Vec::new();
    for (idx, n) in g.nodes.iter().enumerate() {
        let (mut scale, mut offset) = match n.op {
            Op::Unary(UnaryOp::HardSwish) => (1.0f32, 0.0f32),
            Op::Unary(UnaryOp::ScaledHardSwish { scale, offset }) => (scale, offset),
            _ => continue,
        };
        let (mut out, mut folded) = (n.output, Vec::new());
        while let Some(&next) = reader.get(&out).filter(|_| private(out)) {
            let m = &g.nodes[next];
            let Op::Binary {
                op,
                act: Activation::None,
            } = m.op
            else {
                break;
            };
            let [a, b] = m.inputs[..] else { break };
            let (first, other) = if a == out { (true, b) } else { (false, a) };
            let Some(c) = scalar(g, other) else { break };
            if remove[next] || g.tensor(m.output).shape != g.tensor(out).shape {
                break;
            }
            match op {
                BinaryOp::Mul => (scale, offset) = (scale * c, offset * c),
                BinaryOp::Add => offset += c,
                BinaryOp::Sub if first => offset -= c,
                _ => break,
            }
            remove[next] = true;
            folded.push(next);
            out = m.output;
        }
        if !folded.is_empty() {
            found.push((idx, UnaryOp::ScaledHardSwish { scale, offset }, out, folded));
        }
    }
    if found.is_empty() {
        return Ok(false);
    }
    for (idx, op, out, folded) in found {
        let names: Vec<String> = folded.iter().map(|&i| g.nodes[i].name.clone()).collect();
        let n = &mut g.nodes[idx];
        n.name = format!("{}+{}", n.name, names.join("+"));
        n.op = Op::Unary(op);
        n.output = out;
    }
    let mut keep = remove.iter().map(|r| !r);
    g.nodes.retain(|_| keep.next().unwrap_or(true));
    Ok(true)
}

/// The value of a one-element float constant.
fn scalar(g: &Graph, t: TensorId) -> Option<f32> {
    match g.const_f32(t)? {
        [v] => Some(*v),
        _ => None,
    }
}
