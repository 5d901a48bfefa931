//! Weight-only int8 (`ember convert --quantize int8-weights`): the weights of fully connected layers
//! (ONNX Gemm and MatMul with a constant 2-D weight, the builder's `linear`) and the tables of
//! embedding lookups become int8, symmetric per output channel (per row of `[OUT, IN]`, per row of an
//! embedding table), with one f32 scale per channel: `scale = max|w| / 127`, `q = round(w / scale)` in
//! `[-127, 127]`. Activations stay f32, so nothing is calibrated: this is for models whose
//! activations do not quantize well (transformers), and it makes the weights four times smaller.
//!
//! It runs on the IR after the graph passes (so fused activations and folded affine ops are in the
//! weights already) and before lowering: each node becomes `FullyConnectedW8` or an int8
//! `Embedding`, whose kernels read the int8 weights in place.

use std::collections::HashMap;

use crate::ir::{ConstData, DType, Graph, Op, TensorId};
use crate::ConvertError;

/// What [`weight_only_int8`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeightOnlySummary {
    /// Fully connected layers given int8 weights.
    pub layers: usize,
    /// Embedding tables made int8.
    pub embeddings: usize,
    /// Bytes of the f32 weights replaced.
    pub f32_bytes: usize,
    /// Bytes of their int8 values and f32 scales.
    pub int8_bytes: usize,
    /// Nodes with float weights left in f32, with the reason (`name (op): why`).
    pub skipped: Vec<String>,
}

/// Replaces the f32 weights of fully connected layers and embedding tables by int8 ones with per-row
/// scales. A weight shared by several nodes is quantized once.
pub fn weight_only_int8(g: &mut Graph) -> Result<WeightOnlySummary, ConvertError> {
    let mut summary = WeightOnlySummary::default();
    let mut done: HashMap<TensorId, (TensorId, TensorId)> = HashMap::new();
    for i in 0..g.nodes.len() {
        let (weight_slot, fc_act) = match &g.nodes[i].op {
            Op::FullyConnected { act } => (1, Some(*act)),
            Op::Embedding => (0, None),
            Op::MatMul => {
                let n = &g.nodes[i];
                if n.inputs.iter().any(|&t| g.is_const(t)) {
                    summary.skipped.push(format!(
                        "{} (MatMul): a constant operand of rank above 2 (batched weights)",
                        n.name
                    ));
                }
                continue;
            }
            _ => continue,
        };
        let Some(&w) = g.nodes[i].inputs.get(weight_slot) else {
            continue;
        };
        let wt = g.tensor(w);
        let Some(ConstData::F32(values)) = &wt.data else {
            if wt.data.is_none() {
                let n = &g.nodes[i];
                summary.skipped.push(format!(
                    "{} ({}): its weights are computed at run time",
                    n.name,
                    n.op.name()
                ));
            }
            continue;
        };
        if wt.dtype != DType::F32 || wt.shape.is_empty() {
            continue;
        }
        let (q, s) = match done.get(&w) {
            Some(&pair) => pair,
            None => {
                let rows = wt.shape[0];
                let width = values.len().checked_div(rows).unwrap_or(0);
                let (q, scales) = super::quantize_weights(values, rows, width.max(1));
                let (name, shape) = (wt.name.clone(), wt.shape.clone());
                summary.f32_bytes += values.len() * 4;
                summary.int8_bytes += q.len() + scales.len() * 4;
                let q = g.add_constant_of(
                    &format!("{name}.int8"),
                    shape,
                    ConstData::I64(q.into_iter().map(i64::from).collect()),
                    DType::I8,
                );
                let s = g.add_constant(
                    &format!("{name}.scales"),
                    vec![rows],
                    ConstData::F32(scales),
                );
                done.insert(w, (q, s));
                (q, s)
            }
        };
        let n = &mut g.nodes[i];
        match fc_act {
            Some(act) => {
                // x, w[, b] -> x, q, scales[, b]
                let mut inputs = vec![n.inputs[0], q, s];
                inputs.extend(n.inputs.get(2));
                n.inputs = inputs;
                n.op = Op::FullyConnectedW8 { act };
                summary.layers += 1;
            }
            None => {
                // table, ids -> q, ids, scales
                n.inputs = vec![q, n.inputs[1], s];
                summary.embeddings += 1;
            }
        }
    }
    g.check()
        .map_err(|e| ConvertError::internal(format!("graph check after int8-weights: {e}")))?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    use ember_core::ops::math::activation::Activation;

    /// A fully connected layer after an embedding: both become int8 with per-row scales.
    #[test]
    fn linear_and_embedding_weights_become_int8_per_row() {
        let mut g = Graph::new(13);
        let ids = g.add_activation_of("ids", vec![1, 2], DType::I64);
        g.inputs.push(ids);
        let table = g.add_constant(
            "table",
            vec![3, 2],
            ConstData::F32(vec![0.5, -1.0, 0.0, 0.0, 2.0, 1.0]),
        );
        let e = crate::ir::emit::add_node(
            &mut g,
            "emb",
            "emb",
            "test",
            Op::Embedding,
            vec![table, ids],
        )
        .unwrap();
        let w = g.add_constant("w", vec![1, 2], ConstData::F32(vec![0.25, -0.01]));
        let fc = Op::FullyConnected {
            act: Activation::Relu,
        };
        let y = crate::ir::emit::add_node(&mut g, "fc", "y", "test", fc, vec![e, w]).unwrap();
        g.outputs.push(y);
        let s = weight_only_int8(&mut g).unwrap();
        assert_eq!((s.layers, s.embeddings), (1, 1));
        assert_eq!(s.f32_bytes, 8 * 4);
        assert_eq!(s.int8_bytes, 8 + 4 * 4);
        let emb = &g.nodes[0];
        assert_eq!(emb.op, Op::Embedding);
        let q = g.tensor(emb.inputs[0]);
        assert_eq!(q.dtype, DType::I8);
        assert_eq!(q.data, Some(ConstData::I64(vec![64, -127, 0, 0, 127, 64])));
        assert_eq!(
            g.const_f32(emb.inputs[2]).unwrap(),
            [1.0 / 127.0, 1.0, 2.0 / 127.0]
        );
        let fc = &g.nodes[1];
        assert_eq!(
            fc.op,
            Op::FullyConnectedW8 {
                act: Activation::Relu
            }
        );
        assert_eq!(
            g.tensor(fc.inputs[1]).data,
            Some(ConstData::I64(vec![127, -5]))
        );
    }
}
