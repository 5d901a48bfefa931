//! Removes every inference BatchNormalization ([`Op::BatchNorm`]). With `s = scale / sqrt(var + eps)`
//! and `t = B - mean * s` per channel, `bn(x) = x * s + t`:
//! - folded into the Conv2d or FullyConnected that produces `x` when nothing else reads `x`, the
//!   producer has constant weights and no fused activation, and (FullyConnected) `x` is `[N, C]`: each
//!   output channel's weights are scaled by `s[c]` and its bias becomes `b[c] * s[c] + t[c]`; the node is
//!   named `producer+batch_norm`;
//! - otherwise rewritten as a Mul and an Add with constants shaped `[C, 1, ...]`, which broadcast over
//!   axis 1 of `[N, C, ...]` (and which the layout pass permutes when the data is NHWC).
//!
//! It runs before the layout pass, so weights are still OIHW (Conv2d) or `[OUT, IN]` (FullyConnected):
//! output channel `c` owns the `c`-th contiguous block of the weights either way.

use std::collections::HashMap;

use ember_core::ops::math::activation::Activation;

use ember_core::ops::math::binary::BinaryOp;

use crate::ir::{ConstData, Graph, Node, Op, TensorId};
use crate::ConvertError;

/// Removes every BatchNorm in one walk.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    if !g.nodes.iter().any(|n| matches!(n.op, Op::BatchNorm { .. })) {
        return Ok(false);
    }
    let uses = g.use_counts();
    let nodes = std::mem::take(&mut g.nodes);
    let mut out: Vec<Node> = Vec::with_capacity(nodes.len() + 1);
    // The node of `out` that computes each tensor, kept current as nodes are folded.
    let mut producer: HashMap<TensorId, usize> = HashMap::new();
    for node in nodes {
        let Op::BatchNorm { epsilon } = node.op else {
            producer.insert(node.output, out.len());
            out.push(node);
            continue;
        };
        let (s, t) = affine(g, &node, epsilon)?;
        let x = node.inputs[0];
        let sole_reader = !g.is_kept(x) && uses.get(&x) == Some(&1);
        if let Some(&p) = producer.get(&x).filter(|_| sole_reader) {
            if fold_into(g, &mut out[p], &s, &t) {
                out[p].output = node.output;
                out[p].name = format!("{}+{}", out[p].name, node.name);
                producer.insert(node.output, p);
                continue;
            }
        }
        rewrite(g, node, s, t, &mut out);
        producer.insert(out[out.len() - 1].output, out.len() - 1);
    }
    g.nodes = out;
    Ok(true)
}

/// The per-channel `(s, t)` of a BatchNorm node.
fn affine(g: &Graph, node: &Node, epsilon: f32) -> Result<(Vec<f32>, Vec<f32>), ConvertError> {
    let input = |i: usize| {
        g.const_f32(node.inputs[i]).ok_or_else(|| {
            ConvertError::internal(format!(
                "BatchNorm node \"{}\": input {i} is not a FLOAT constant",
                node.name
            ))
        })
    };
    let (scale, bias, mean, var) = (input(1)?, input(2)?, input(3)?, input(4)?);
    Ok(bn_affine(scale, bias, mean, var, epsilon))
}

/// The per-channel `(s, t)` of `bn(x) = x * s + t` for a BatchNormalization with these constants:
/// `s = scale / sqrt(var + epsilon)` and `t = bias - mean * s`, in f64 and rounded once (shared with the
/// post-training quantizer, which folds a BatchNormalization into its Conv before quantizing the
/// weights, so that both folds give the same numbers).
pub(crate) fn bn_affine(
    scale: &[f32],
    bias: &[f32],
    mean: &[f32],
    var: &[f32],
    epsilon: f32,
) -> (Vec<f32>, Vec<f32>) {
    let s: Vec<f64> = scale
        .iter()
        .zip(var)
        .map(|(&k, &v)| f64::from(k) / (f64::from(v) + f64::from(epsilon)).sqrt())
        .collect();
    let t = bias
        .iter()
        .zip(mean)
        .zip(&s)
        .map(|((&b, &m), &s)| (f64::from(b) - f64::from(m) * s) as f32)
        .collect();
    (s.into_iter().map(|v| v as f32).collect(), t)
}

/// Weights and bias of a layer followed by `x * s + t`: output channel `c`'s weights (every element
/// `i` of `w` with `(i / inner) % s.len() == c`) times `s[c]`, and its bias `b[c] * s[c] + t[c]`.
pub(crate) fn fold_affine_into_weights(
    w: &[f32],
    inner: usize,
    bias: &[f32],
    s: &[f32],
    t: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let channels = s.len();
    let inner = inner.max(1);
    let w = w
        .iter()
        .enumerate()
        .map(|(i, &v)| v * s[(i / inner) % channels])
        .collect();
    let b = bias
        .iter()
        .zip(s)
        .zip(t)
        .map(|((&b, &s), &t)| b * s + t)
        .collect();
    (w, b)
}

/// Folds `x * s + t` into the Conv2d or FullyConnected `p`, if it can take it (also used by
/// [`fold_affine`](super::fold_affine)).
pub(super) fn fold_into(g: &mut Graph, p: &mut Node, s: &[f32], t: &[f32]) -> bool {
    let foldable = match &p.op {
        Op::Conv2d(c) => c.act == Activation::None,
        Op::FullyConnected { act } => {
            *act == Activation::None && g.tensor(p.output).shape.len() == 2
        }
        _ => false,
    };
    if !foldable {
        return false;
    }
    let channels = s.len();
    let Some(w) = p.inputs.get(1).and_then(|&w| g.const_f32(w)) else {
        return false;
    };
    let bias = match p.inputs.get(2) {
        Some(&b) => match g.const_f32(b) {
            Some(b) => b.to_vec(),
            None => return false,
        },
        None => vec![0.0; channels],
    };
    if channels == 0 || !w.len().is_multiple_of(channels) || bias.len() != channels {
        return false;
    }
    // Output channel `c` owns the `c`-th contiguous block of the weights.
    let (w, b) = fold_affine_into_weights(w, w.len() / channels, &bias, s, t);
    let w_shape = g.tensor(p.inputs[1]).shape.clone();
    let w_name = format!("{}.w_bn", p.name);
    let b_name = format!("{}.b_bn", p.name);
    let w_id = g.add_constant(&w_name, w_shape, ConstData::F32(w));
    let b_id = g.add_constant(&b_name, vec![channels], ConstData::F32(b));
    p.inputs.truncate(1);
    p.inputs.extend([w_id, b_id]);
    true
}

/// Appends `y = x * s + t` (a Mul and an Add with constants `[C, 1, ...]`) in place of `node`.
fn rewrite(g: &mut Graph, node: Node, s: Vec<f32>, t: Vec<f32>, out: &mut Vec<Node>) {
    let x = node.inputs[0];
    let rank = g.tensor(x).shape.len();
    let mut shape = vec![s.len()];
    shape.resize(rank - 1, 1);
    let s_id = g.add_constant(
        &format!("{}.scale", node.name),
        shape.clone(),
        ConstData::F32(s),
    );
    let t_id = g.add_constant(&format!("{}.shift", node.name), shape, ConstData::F32(t));
    let x_shape = g.tensor(x).shape.clone();
    let scaled: TensorId = g.add_activation(&format!("{}.scaled", node.name), x_shape);
    let binary = |op| Op::Binary {
        op,
        act: Activation::None,
    };
    out.push(Node {
        name: format!("{}.scale", node.name),
        onnx_op: node.onnx_op.clone(),
        op: binary(BinaryOp::Mul),
        inputs: vec![x, s_id],
        output: scaled,
    });
    out.push(Node {
        name: node.name,
        onnx_op: node.onnx_op,
        op: binary(BinaryOp::Add),
        inputs: vec![scaled, t_id],
        output: node.output,
    });
}
