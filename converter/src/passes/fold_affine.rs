//! Folds a multiplication, division, addition or subtraction by a constant into the Conv2d or
//! FullyConnected that produces the other operand: `conv(x) * s`, `conv(x) / s`, `conv(x) + t` and
//! `conv(x) - t`, where the constant is one value, or one value per output channel (shaped to broadcast
//! over axis 1 of `[N, C, ...]`). The producer's weights and bias absorb it as a BatchNormalization does
//! ([`fold_batch_norm::fold_into`](super::fold_batch_norm)), and an activation fused into the binary op
//! moves to the producer. Nothing else may read the producer's output, and the producer must have no
//! activation of its own.
//!
//! Exporters write such chains for learnable scales and shifts (PaddleOCR's PP-LCNetV3 follows every
//! convolution with a scalar `* a + b`) and for un-fused normalizations; each folded op is a whole pass
//! over a feature map saved at run time. A division becomes a multiplication by the reciprocal, rounded
//! once (the result can differ from the division in the last bit).
//!
//! The same constants also fold forward, into the Conv2d or FullyConnected that is the only reader of
//! the op's result, when that convolution has no padding (a padded border would see the shift where it
//! must see zeros): `conv(x * s + t)` has weights `w[o, c, ...] * s[c]` and bias
//! `b[o] + sum over c, ... of w[o, c, ...] * t[c]`. That removes the learnable scale and shift PP-LCNetV3
//! puts after each activation, where the next layer is a 1x1 convolution.
//!
//! It runs before the layout pass, so activations are still NCHW and weights OIHW or `[OUT, IN]`.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use super::fold_batch_norm::fold_into;
use crate::ir::{ConstData, Graph, Node, Op, TensorId};
use crate::ConvertError;

/// Folds every such op it can, into the layer before it or else into the layer after it.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let backward = fold_into_producers(g)?;
    let forward = fold_into_readers(g)?;
    Ok(backward || forward)
}

/// An affine op `x * s + t`: its node, `x`, and `(s, t)` per channel of axis 1.
struct Affine {
    node: usize,
    x: TensorId,
    s: Vec<f32>,
    t: Vec<f32>,
}

/// The node `idx` as an affine op with `channels` values along axis 1, if it is a Mul, Div, Add or Sub
/// by a constant that does not broadcast its other operand to a larger shape.
fn affine_of(
    g: &Graph,
    idx: usize,
    channels_of: impl Fn(TensorId) -> Option<usize>,
) -> Option<Affine> {
    let n = &g.nodes[idx];
    let Op::Binary { op, .. } = n.op else {
        return None;
    };
    if n.inputs.len() != 2 {
        return None;
    }
    // The constant may come first only where the op commutes.
    let (x, c) = match (g.is_const(n.inputs[0]), g.is_const(n.inputs[1])) {
        (false, true) => (n.inputs[0], n.inputs[1]),
        (true, false) if matches!(op, BinaryOp::Mul | BinaryOp::Add) => (n.inputs[1], n.inputs[0]),
        _ => return None,
    };
    if g.tensor(n.output).shape != g.tensor(x).shape {
        return None;
    }
    let channels = channels_of(x)?;
    let values = per_channel(g, c, x, channels)?;
    let (s, t): (Vec<f32>, Vec<f32>) = match op {
        BinaryOp::Mul => (values, vec![0.0; channels]),
        BinaryOp::Div => (
            values
                .iter()
                .map(|&v| (1.0 / f64::from(v)) as f32)
                .collect(),
            vec![0.0; channels],
        ),
        BinaryOp::Add => (vec![1.0; channels], values),
        BinaryOp::Sub => (vec![1.0; channels], values.iter().map(|&v| -v).collect()),
        _ => return None,
    };
    if s.iter().chain(&t).any(|v| !v.is_finite()) {
        return None;
    }
    Some(Affine { node: idx, x, s, t })
}

/// Folds affine ops into the Conv2d or FullyConnected producing their operand.
fn fold_into_producers(g: &mut Graph) -> Result<bool, ConvertError> {
    let mut changed = false;
    // One fold per walk of the producers map: each fold rewires a producer, and a chain (`* a + b`) folds
    // over successive walks.
    loop {
        let producers = g.producers();
        let uses = g.use_counts();
        let mut folded = None;
        for idx in 0..g.nodes.len() {
            let Op::Binary { act, .. } = g.nodes[idx].op else {
                continue;
            };
            let producer_of = |x: TensorId| {
                let p = *producers.get(&x)?;
                (!g.is_kept(x) && uses.get(&x) == Some(&1))
                    .then(|| producer_channels(g, p))
                    .flatten()
            };
            let Some(a) = affine_of(g, idx, producer_of) else {
                continue;
            };
            if let Some(&p) = producers.get(&a.x) {
                folded = Some((idx, p, a.s, a.t, act));
                break;
            }
        }
        let Some((idx, p, s, t, act)) = folded else {
            return Ok(changed);
        };
        let mut producer = g.nodes[p].clone();
        if !fold_into(g, &mut producer, &s, &t) {
            // `producer_channels` checked what `fold_into` needs; stop rather than loop.
            return Ok(changed);
        }
        if let Some(a) = producer.op.activation_mut() {
            *a = act;
        }
        let node = g.nodes.remove(idx);
        producer.output = node.output;
        producer.name = format!("{}+{}", producer.name, node.name);
        // The producer comes before its reader: removing the reader left its index alone.
        g.nodes[p] = producer;
        changed = true;
    }
}

/// Folds affine ops without activation into the unpadded Conv2d or the FullyConnected that is the only
/// reader of their result.
fn fold_into_readers(g: &mut Graph) -> Result<bool, ConvertError> {
    let mut changed = false;
    loop {
        let uses = g.use_counts();
        let mut folded = None;
        for idx in 0..g.nodes.len() {
            if !matches!(
                g.nodes[idx].op,
                Op::Binary {
                    act: Activation::None,
                    ..
                }
            ) {
                continue;
            }
            let y = g.nodes[idx].output;
            if g.is_kept(y) || uses.get(&y) != Some(&1) {
                continue;
            }
            let Some(r) = g.nodes.iter().position(|n| n.inputs.first() == Some(&y)) else {
                continue;
            };
            let Some(channels) = reader_channels(g, r) else {
                continue;
            };
            let Some(a) = affine_of(g, idx, |x| {
                (g.tensor(x).shape.get(1) == Some(&channels)).then_some(channels)
            }) else {
                continue;
            };
            folded = Some((a, r));
            break;
        }
        let Some((a, r)) = folded else {
            return Ok(changed);
        };
        let mut reader = g.nodes[r].clone();
        if !fold_input_affine(g, &mut reader, &a.s, &a.t) {
            return Ok(changed);
        }
        reader.inputs[0] = a.x;
        let node = g.nodes.remove(a.node);
        reader.name = format!("{}+{}", node.name, reader.name);
        // The affine op comes before its reader.
        g.nodes[r - 1] = reader;
        changed = true;
    }
}

/// True if node `n` has constant weights (input 1) and, if it has one, a constant bias (input 2).
fn const_params(g: &Graph, n: &Node) -> bool {
    let is_const = |i: usize| n.inputs.get(i).is_some_and(|&t| g.const_f32(t).is_some());
    is_const(1) && (n.inputs.len() < 3 || is_const(2))
}

/// The input channel count of node `r` if it is an unpadded Conv2d or a FullyConnected (2-D input)
/// with constant weights (and bias), which can absorb an affine op on its input.
fn reader_channels(g: &Graph, r: usize) -> Option<usize> {
    let n = &g.nodes[r];
    let ok = match &n.op {
        Op::Conv2d(c) => c.pads == [0; 4],
        Op::FullyConnected { .. } => g.tensor(n.inputs[0]).shape.len() == 2,
        _ => false,
    };
    if !ok || !const_params(g, n) {
        return None;
    }
    g.tensor(n.inputs[0])
        .shape
        .get(1)
        .copied()
        .filter(|&c| c > 0)
}

/// Rewrites the weights and bias of `r` (an unpadded Conv2d, OIHW weights, or a FullyConnected,
/// `[OUT, IN]` weights) so that it computes on `x` what it computed on `x * s + t` (per input channel).
fn fold_input_affine(g: &mut Graph, r: &mut Node, s: &[f32], t: &[f32]) -> bool {
    let groups = match &r.op {
        Op::Conv2d(c) => c.groups.max(1),
        _ => 1,
    };
    let channels = s.len();
    let w_shape = g.tensor(r.inputs[1]).shape.clone();
    let Some(w) = g.const_f32(r.inputs[1]) else {
        return false;
    };
    let outputs = w_shape.first().copied().unwrap_or(0);
    if outputs == 0 || !w.len().is_multiple_of(outputs) || !channels.is_multiple_of(groups) {
        return false;
    }
    // Per output channel: `in_per_group` input channels of `taps` weights each.
    let row = w.len() / outputs;
    let in_per_group = channels / groups;
    if in_per_group == 0 || !row.is_multiple_of(in_per_group) || !outputs.is_multiple_of(groups) {
        return false;
    }
    let taps = row / in_per_group;
    let out_per_group = outputs / groups;
    let bias = match r.inputs.get(2) {
        Some(&b) => match g.const_f32(b) {
            Some(b) if b.len() == outputs => b.to_vec(),
            _ => return false,
        },
        None => vec![0.0; outputs],
    };
    let mut new_w = w.to_vec();
    let mut new_b = Vec::with_capacity(outputs);
    for (o, &b) in bias.iter().enumerate() {
        let first = (o / out_per_group) * in_per_group;
        // In f64, rounded once.
        let mut shift = f64::from(b);
        for ci in 0..in_per_group {
            let c = first + ci;
            for k in 0..taps {
                let at = o * row + ci * taps + k;
                shift += f64::from(w[at]) * f64::from(t[c]);
                new_w[at] = w[at] * s[c];
            }
        }
        new_b.push(shift as f32);
    }
    let w_id = g.add_constant(&format!("{}.w_in", r.name), w_shape, ConstData::F32(new_w));
    let b_id = g.add_constant(
        &format!("{}.b_in", r.name),
        vec![outputs],
        ConstData::F32(new_b),
    );
    r.inputs.truncate(1);
    r.inputs.extend([w_id, b_id]);
    true
}

/// The output channel count of node `p` if it is a Conv2d or FullyConnected that can absorb an affine
/// (constant weights, no activation; a FullyConnected with a 2-D output).
fn producer_channels(g: &Graph, p: usize) -> Option<usize> {
    let n = &g.nodes[p];
    let ok = match &n.op {
        Op::Conv2d(c) => c.act == Activation::None,
        Op::FullyConnected { act } => {
            *act == Activation::None && g.tensor(n.output).shape.len() == 2
        }
        _ => false,
    };
    if !ok || !const_params(g, n) {
        return None;
    }
    g.tensor(n.output).shape.get(1).copied().filter(|&c| c > 0)
}

/// The constant `c` as one value per channel of `x` (`[N, C, ...]`): a single value repeated, or `C`
/// values laid along axis 1 of the broadcast.
fn per_channel(g: &Graph, c: TensorId, x: TensorId, channels: usize) -> Option<Vec<f32>> {
    let data = g.const_f32(c)?;
    let shape = &g.tensor(c).shape;
    if data.len() == 1 {
        return Some(vec![data[0]; channels]);
    }
    if data.len() != channels {
        return None;
    }
    // Aligned to the right against `x`'s rank, the only dim above 1 must be axis 1.
    let rank = g.tensor(x).shape.len();
    if shape.len() > rank {
        return None;
    }
    let offset = rank - shape.len();
    let on_channel_axis = shape
        .iter()
        .enumerate()
        .all(|(i, &d)| d == 1 || (i + offset == 1 && d == channels));
    on_channel_axis.then(|| data.to_vec())
}
