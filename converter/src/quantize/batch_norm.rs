//! Folds each inference BatchNormalization that directly follows a Conv (or a Gemm with `beta = 1`)
//! into that layer's weights and bias, in the ONNX graph, before the QDQ rewrite quantizes them. Folded
//! after quantization (by the `fold_batch_norm` pass at import) the weights would be a dequantized
//! tensor the fold cannot scale, and the layer would stay float.
//!
//! The arithmetic is the import pass's own ([`bn_affine`], [`fold_affine_into_weights`]), so a model
//! folded here computes what the float conversion computes. A BatchNormalization is folded when its
//! input is the layer's only output, read by nothing else (and not a graph output), its scale, B, mean
//! and var are FLOAT initializers of one value per output channel, the layer's weights (and bias, if
//! any) are FLOAT initializers, and it is in inference mode with its running statistics unused. The
//! layer then writes the BatchNormalization's output, and the BatchNormalization is removed.

use std::collections::{HashMap, HashSet};

use super::tensors::{float_values, tensor_f32};
use crate::onnx::is_default_domain;
use crate::onnx::proto::{data_type, GraphProto, NodeProto, TensorProto};
use crate::passes::fold_batch_norm::{bn_affine, fold_affine_into_weights};

/// Folds every foldable BatchNormalization of `g` (whose initializers are `init`, Constant nodes
/// already among them) into the Conv or Gemm before it. Returns how many were folded.
pub(super) fn fold_batch_norms(
    g: &mut GraphProto,
    init: &mut HashMap<String, TensorProto>,
) -> usize {
    let mut readers: HashMap<String, usize> = HashMap::new();
    for n in &g.node {
        for i in n.input.iter().filter(|i| !i.is_empty()) {
            *readers.entry(i.clone()).or_default() += 1;
        }
    }
    let outputs: HashSet<&str> = g.output.iter().map(|o| o.name.as_str()).collect();
    let producer: HashMap<String, usize> = g
        .node
        .iter()
        .enumerate()
        .filter_map(|(k, n)| Some((n.output.first()?.clone(), k)))
        .collect();
    let mut removed: HashSet<usize> = HashSet::new();
    let mut dropped: Vec<String> = Vec::new();
    for k in 0..g.node.len() {
        let bn = &g.node[k];
        if bn.op_type != "BatchNormalization" || !is_default_domain(&bn.domain) {
            continue;
        }
        let Some(&p) = bn.input.first().and_then(|x| producer.get(x)) else {
            continue;
        };
        let x = &bn.input[0];
        if outputs.contains(x.as_str()) || readers.get(x) != Some(&1) {
            continue;
        }
        let Some(fold) = plan(&g.node[p], bn, init) else {
            continue;
        };
        // New names for the folded tensors: the originals may be read elsewhere.
        let fresh = |base: String| {
            let mut name = base.clone();
            let mut i = 1;
            while init.contains_key(&name) || readers.contains_key(&name) {
                name = format!("{base}_{i}");
                i += 1;
            }
            name
        };
        let y = bn.output[0].clone();
        let w_name = fresh(format!("{y}_folded_weights"));
        let b_name = fresh(format!("{y}_folded_bias"));
        let bn_inputs = bn.input.clone();
        let x = x.clone();
        init.insert(
            w_name.clone(),
            tensor_f32(&w_name, &fold.w_dims, &fold.weights),
        );
        init.insert(
            b_name.clone(),
            tensor_f32(&b_name, &[fold.bias.len() as i64], &fold.bias),
        );
        let layer = &mut g.node[p];
        let old: Vec<String> = layer.input[1..].to_vec();
        layer.input.truncate(1);
        layer.input.extend([w_name.clone(), b_name.clone()]);
        layer.output[0] = y;
        for name in old.iter().chain(&bn_inputs[1..]).chain([&x]) {
            if let Some(r) = readers.get_mut(name) {
                *r -= 1;
                if *r == 0 {
                    readers.remove(name);
                    dropped.push(name.clone());
                }
            }
        }
        readers.insert(w_name, 1);
        readers.insert(b_name, 1);
        removed.insert(k);
    }
    // Initializers nothing reads any more go, and with them their (old IR) graph inputs.
    let gone: HashSet<String> = dropped
        .into_iter()
        .filter(|n| !outputs.contains(n.as_str()) && init.remove(n).is_some())
        .collect();
    g.input.retain(|v| !gone.contains(&v.name));
    let mut k = 0;
    g.node.retain(|_| {
        k += 1;
        !removed.contains(&(k - 1))
    });
    removed.len()
}

/// A layer's folded weights (of shape `w_dims`) and bias.
struct Fold {
    w_dims: Vec<i64>,
    weights: Vec<f32>,
    bias: Vec<f32>,
}

/// The folded weights and bias of `layer` followed by `bn`, if it can be folded.
fn plan(layer: &NodeProto, bn: &NodeProto, init: &HashMap<String, TensorProto>) -> Option<Fold> {
    if !is_default_domain(&layer.domain) || layer.output.len() != 1 {
        return None;
    }
    // Inference mode, its running statistics not asked for.
    let inference = bn.attr_i("training_mode").unwrap_or(0) == 0
        && bn.attr_i("spatial").unwrap_or(1) != 0
        && bn.attr_i("is_test") != Some(0)
        && bn.output.first().is_some_and(|y| !y.is_empty())
        && bn.output[1..].iter().all(String::is_empty)
        && bn.input.len() == 5;
    if !inference {
        return None;
    }
    let floats = |name: &String| {
        let t = init.get(name)?;
        (t.data_type == data_type::FLOAT)
            .then(|| float_values(t).ok())
            .flatten()
            .map(|v| (t.dims.clone(), v))
    };
    let (w_dims, w) = floats(layer.input.get(1)?)?;
    // The output channel axis of the weights, and the elements after it.
    let axis = match layer.op_type.as_str() {
        "Conv" => 0,
        "Gemm" => {
            let beta = layer.attribute.iter().find(|a| a.name == "beta");
            if beta.is_some_and(|a| a.f != Some(1.0)) || w_dims.len() != 2 {
                return None;
            }
            usize::from(layer.attr_i("transB").unwrap_or(0) == 0)
        }
        _ => return None,
    };
    let dims: Vec<usize> = w_dims.iter().map(|&d| d.max(0) as usize).collect();
    let channels = *dims.get(axis)?;
    let inner: usize = dims[axis + 1..].iter().product();
    if channels == 0 || w.len() != dims.iter().product::<usize>() {
        return None;
    }
    let per_channel = |name: &String| floats(name).map(|(_, v)| v).filter(|v| v.len() == channels);
    let bias = match layer.input.get(2).filter(|b| !b.is_empty()) {
        // A Gemm's C broadcasts: only one value per output channel ([N]) is a per-channel bias.
        Some(b) => {
            let (dims, values) = floats(b)?;
            (dims.len() == 1 && values.len() == channels).then_some(values)?
        }
        None => vec![0.0; channels],
    };
    let [scale, b, mean, var] = [1, 2, 3, 4].map(|i| per_channel(&bn.input[i]));
    let epsilon = bn
        .attribute
        .iter()
        .find(|a| a.name == "epsilon")
        .map_or(Some(1e-5), |a| a.f)?;
    let (s, t) = bn_affine(&scale?, &b?, &mean?, &var?, epsilon);
    let (weights, bias) = fold_affine_into_weights(&w, inner, &bias, &s, &t);
    Some(Fold {
        w_dims,
        weights,
        bias,
    })
}
