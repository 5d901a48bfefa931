//! Recognizes HardSwish written out in element-wise ops and replaces it by the one op
//! ([`UnaryOp::HardSwish`]: `x * min(max(x / 6 + 1/2, 0), 1)`):
//!
//! - `x * clip(x + 3, 0, 6) / 6` (or `* (1/6)`), as paddle2onnx and older PyTorch exports write it: an
//!   Add of 3 whose Clip (or Relu6) the activation pass already fused, a Mul by `x`, a Div by 6;
//! - `x * HardSigmoid(x)` with HardSigmoid's default `alpha = 1/6`, `beta = 1/2`;
//!
//! and SiLU (Swish with `alpha = 1`, [`UnaryOp::Swish`]: `x * sigmoid(x)`), written as a Sigmoid and a
//! Mul by its input in either order, as YOLO-class detectors and EfficientNets export it.
//!
//! The intermediate results must have no other reader. Three or two passes over a feature map become
//! one. The written-out form rounds at each step: the one op differs from it by rounding only (a few
//! float32 steps of the result).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;

use crate::ir::{Graph, Node, Op, TensorId};
use crate::ConvertError;

/// Replaces every such chain in one walk.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let producers = g.producers();
    let uses = g.use_counts();
    // (index of the last node, the chain's other nodes, x, the one op)
    let mut found: Vec<(usize, Vec<usize>, TensorId, UnaryOp)> = Vec::new();
    let private = |t: TensorId| !g.is_kept(t) && uses.get(&t) == Some(&1);
    let node_of = |t: TensorId| producers.get(&t).map(|&i| (i, &g.nodes[i]));
    for (idx, n) in g.nodes.iter().enumerate() {
        // The outer step: `m / 6` or `m * (1/6)` (written-out form), or `x * hs` (HardSigmoid form).
        if let Some(m) = scaled_by_a_sixth(g, n) {
            let Some((mi, mul)) = node_of(m).filter(|_| private(m)) else {
                continue;
            };
            let Some((a, b)) = product(mul) else { continue };
            // `x * t` or `t * x`, with `t = clip(x + 3, 0, 6)`.
            for (x, t) in [(a, b), (b, a)] {
                if let Some((ti, add)) = node_of(t).filter(|_| private(t)) {
                    if is_plus_three_relu6(g, add, x) {
                        found.push((idx, vec![mi, ti], x, UnaryOp::HardSwish));
                        break;
                    }
                }
            }
        } else if let Some((a, b)) = product(n) {
            for (x, h) in [(a, b), (b, a)] {
                if let Some((hi, gate)) = node_of(h).filter(|_| private(h)) {
                    if let Some(op) = gated(gate, x) {
                        found.push((idx, vec![hi], x, op));
                        break;
                    }
                }
            }
        }
    }
    if found.is_empty() {
        return Ok(false);
    }
    let mut remove = vec![false; g.nodes.len()];
    for (idx, others, x, op) in found {
        // A node can take part in one chain only (found chains are disjoint unless a graph reuses a
        // private intermediate, which `private` rules out).
        if others.iter().chain([&idx]).any(|&i| remove[i]) {
            continue;
        }
        let last = &mut g.nodes[idx];
        let what = match op {
            UnaryOp::HardSwish => "hard_swish",
            _ => "silu",
        };
        *last = Node {
            name: format!("{}({what})", last.name),
            onnx_op: last.onnx_op.clone(),
            op: Op::Unary(op),
            inputs: vec![x],
            output: last.output,
        };
        for i in others {
            remove[i] = true;
        }
    }
    let mut keep = remove.iter().map(|r| !r);
    g.nodes.retain(|_| keep.next().unwrap_or(true));
    Ok(true)
}

/// For `m / 6` or `m * (1/6)` (no activation), `m`.
fn scaled_by_a_sixth(g: &Graph, n: &Node) -> Option<TensorId> {
    let Op::Binary {
        op,
        act: Activation::None,
    } = n.op
    else {
        return None;
    };
    let [a, b] = n.inputs[..] else { return None };
    match op {
        BinaryOp::Div if scalar(g, b) == Some(6.0) => Some(a),
        BinaryOp::Mul if scalar(g, b).is_some_and(is_a_sixth) => Some(a),
        BinaryOp::Mul if scalar(g, a).is_some_and(is_a_sixth) => Some(b),
        _ => None,
    }
}

fn is_a_sixth(v: f32) -> bool {
    (v - 1.0 / 6.0).abs() <= f32::EPSILON
}

/// For `a * b` with no activation, `(a, b)` (callers try both orders).
fn product(n: &Node) -> Option<(TensorId, TensorId)> {
    match n.op {
        Op::Binary {
            op: BinaryOp::Mul,
            act: Activation::None,
        } => match n.inputs[..] {
            [a, b] => Some((a, b)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `n` is `x + 3` (either operand order) clipped to `[0, 6]` by a fused Clip or Relu6.
fn is_plus_three_relu6(g: &Graph, n: &Node, x: TensorId) -> bool {
    let Op::Binary {
        op: BinaryOp::Add,
        act,
    } = n.op
    else {
        return false;
    };
    let relu6 = matches!(act, Activation::Relu6)
        || matches!(act, Activation::Clip { min, max } if min == 0.0 && max == 6.0);
    let [a, b] = n.inputs[..] else { return false };
    relu6 && ((a == x && scalar(g, b) == Some(3.0)) || (b == x && scalar(g, a) == Some(3.0)))
}

/// The one op that `x * n` is, where `n` is a gate of `x`: HardSigmoid with `alpha = 1/6` and
/// `beta = 1/2` (HardSwish's own) makes HardSwish, Sigmoid makes SiLU.
fn gated(n: &Node, x: TensorId) -> Option<UnaryOp> {
    if n.inputs[..] != [x] {
        return None;
    }
    match n.op {
        Op::Unary(UnaryOp::HardSigmoid { alpha, beta }) if is_a_sixth(alpha) && beta == 0.5 => {
            Some(UnaryOp::HardSwish)
        }
        Op::Unary(UnaryOp::Sigmoid) => Some(UnaryOp::Swish { alpha: 1.0 }),
        _ => None,
    }
}

/// The value of a one-element float constant.
fn scalar(g: &Graph, t: TensorId) -> Option<f32> {
    match g.const_f32(t)? {
        [v] => Some(*v),
        _ => None,
    }
}
