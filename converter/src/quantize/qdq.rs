//! The QDQ rewrite: Quantize/Dequantize pairs after every calibrated tensor, per-channel int8 weights
//! and int32 biases behind DequantizeLinear nodes (the layout `quantize_static` writes). A
//! BatchNormalization after a Conv or Gemm is folded into its weights first ([`fold_batch_norms`]).

use std::collections::{HashMap, HashSet};

use prost::Message;

use super::batch_norm::fold_batch_norms;
use super::calibrate::{quantized_tensors, Ranges};
use super::tensors::{float_values, tensor_f32, tensor_i32, tensor_i8};
use super::{activation_params, model_err, quantize_weights};
use crate::onnx::is_default_domain;
use crate::onnx::proto::{
    attribute_type, data_type, AttributeProto, ModelProto, NodeProto, TensorProto,
};
use crate::ConvertError;

/// What the rewrite quantized.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QdqSummary {
    /// Activation tensors given a Quantize/Dequantize pair.
    pub activations: usize,
    /// Weight tensors made per-channel int8.
    pub weights: usize,
    /// Bias tensors made int32.
    pub biases: usize,
    /// BatchNormalizations folded into the Conv or Gemm before them (before their weights were
    /// quantized).
    pub batch_norms_folded: usize,
    /// Tensors left in float, with the reason.
    pub skipped: Vec<String>,
    /// The model's default-domain opset, which the rewrite keeps. Below 13 the per-channel
    /// DequantizeLinear nodes are Ember's reading only: onnxruntime refuses such a model.
    pub opset: i64,
}

/// Rewrites the float ONNX model `onnx` in QDQ form with the calibrated `ranges`.
pub fn quantize_qdq(onnx: &[u8], ranges: &Ranges) -> Result<(Vec<u8>, QdqSummary), ConvertError> {
    let mut model = ModelProto::decode(onnx).map_err(|e| model_err(format!("{e}")))?;
    let opset = model
        .opset_import
        .iter()
        .find(|o| is_default_domain(&o.domain))
        .map_or(0, |o| o.version);
    // Per-channel DequantizeLinear (its `axis`) is ONNX opset 13; Ember's importer reads it at any
    // opset, so an older model quantizes as it is: upgrading its opset here would change what its other
    // nodes mean (Split, Squeeze, Softmax, ReduceSum read their operands differently from 13).
    let mut summary = QdqSummary {
        opset,
        ..QdqSummary::default()
    };
    let names = quantized_tensors(&model);
    let g = model
        .graph
        .as_mut()
        .ok_or_else(|| model_err("the model holds no graph"))?;

    let producer: HashMap<String, String> = g
        .node
        .iter()
        .filter_map(|n| Some((n.output.first()?.clone(), n.op_type.clone())))
        .collect();
    let mut act: HashMap<String, (f32, i8)> = HashMap::new();
    for name in &names {
        if producer.get(name).is_some_and(|op| op == "Softmax") {
            // TFLite's int8 softmax output: probabilities in [0, 1) with 256 steps.
            act.insert(name.clone(), (1.0 / 256.0, -128));
        } else if let Some(&(lo, hi)) = ranges.get(name) {
            act.insert(name.clone(), activation_params(lo, hi));
        } else {
            summary
                .skipped
                .push(format!("{name}: no calibration range"));
        }
    }

    let mut init: HashMap<String, TensorProto> = g
        .initializer
        .drain(..)
        .map(|t| (t.name.clone(), t))
        .collect();
    // Weights written as Constant nodes (paddle2onnx writes every weight so) are initializers by
    // another name: make them initializers, so they quantize like any other.
    let mut nodes_left = Vec::with_capacity(g.node.len());
    for n in std::mem::take(&mut g.node) {
        match constant_value(&n) {
            Some(mut t) => {
                t.name = n.output[0].clone();
                init.insert(t.name.clone(), t);
            }
            None => nodes_left.push(n),
        }
    }
    g.node = nodes_left;
    summary.batch_norms_folded = fold_batch_norms(g, &mut init);
    let mut new_inits: Vec<TensorProto> = Vec::new();
    let mut head: Vec<NodeProto> = Vec::new();
    let mut weight_scales: HashMap<String, Vec<f32>> = HashMap::new();

    // Weights: per output channel.
    for n in &g.node {
        let (w_name, axis) = match n.op_type.as_str() {
            "Conv" => (n.input.get(1), 0usize),
            "Gemm" => {
                let trans_b = n.attr_i("transB").unwrap_or(0);
                (n.input.get(1), if trans_b != 0 { 0 } else { 1 })
            }
            "MatMul" => (n.input.get(1), 1),
            _ => continue,
        };
        let Some(w_name) = w_name else { continue };
        if weight_scales.contains_key(w_name) {
            continue;
        }
        let Some(w) = init.get(w_name) else { continue };
        let dims: Vec<usize> = w.dims.iter().map(|&d| d.max(0) as usize).collect();
        if w.data_type != data_type::FLOAT || (n.op_type != "Conv" && dims.len() != 2) {
            summary.skipped.push(format!(
                "{w_name}: weights that are not a FLOAT matrix or kernel"
            ));
            continue;
        }
        let values = float_values(w).map_err(|e| model_err(format!("{w_name}: {e}")))?;
        let channels = dims.get(axis).copied().unwrap_or(1);
        let inner: usize = dims.iter().skip(axis + 1).product();
        if channels == 0 || values.len() != dims.iter().product::<usize>() {
            continue;
        }
        let (q, scales) = quantize_weights(&values, channels, inner);
        let base = w_name.clone();
        new_inits.push(tensor_i8(&format!("{base}_quantized"), &w.dims, &q));
        new_inits.push(tensor_f32(
            &format!("{base}_scale"),
            &[channels as i64],
            &scales,
        ));
        new_inits.push(tensor_i8(
            &format!("{base}_zero_point"),
            &[channels as i64],
            &vec![0; channels],
        ));
        head.push(dequantize(&base, &base, Some(axis as i64)));
        init.remove(w_name);
        weight_scales.insert(base, scales);
        summary.weights += 1;
    }

    // Biases: int32 with the scale of input times weights.
    let mut done_bias: HashSet<String> = HashSet::new();
    for n in &g.node {
        if !matches!(n.op_type.as_str(), "Conv" | "Gemm") {
            continue;
        }
        let (Some(x), Some(w), Some(b)) = (n.input.first(), n.input.get(1), n.input.get(2)) else {
            continue;
        };
        if b.is_empty() || done_bias.contains(b) {
            continue;
        }
        let (Some(&(x_scale, _)), Some(w_scales), Some(bias)) =
            (act.get(x), weight_scales.get(w), init.get(b))
        else {
            summary.skipped.push(format!(
                "{b}: bias whose input or weights are not quantized"
            ));
            continue;
        };
        let values = float_values(bias).map_err(|e| model_err(format!("{b}: {e}")))?;
        if values.len() != w_scales.len() {
            summary.skipped.push(format!(
                "{b}: bias length differs from the weights' channels"
            ));
            continue;
        }
        let scales: Vec<f32> = w_scales.iter().map(|&s| x_scale * s).collect();
        let q: Vec<i32> = values
            .iter()
            .zip(&scales)
            .map(|(&v, &s)| {
                (f64::from(v) / f64::from(s))
                    .round()
                    .clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
            })
            .collect();
        let len = [q.len() as i64];
        new_inits.push(tensor_i32(&format!("{b}_quantized"), &len, &q));
        new_inits.push(tensor_f32(&format!("{b}_scale"), &len, &scales));
        new_inits.push(tensor_i32(
            &format!("{b}_zero_point"),
            &len,
            &vec![0; q.len()],
        ));
        head.push(dequantize(b, b, Some(0)));
        init.remove(b);
        done_bias.insert(b.clone());
        summary.biases += 1;
    }

    // Activations: a pair after each producer (or after each graph input).
    let inputs: HashSet<String> = g.input.iter().map(|v| v.name.clone()).collect();
    let mut renamed_inputs: HashMap<String, String> = HashMap::new();
    // In the graph's order (`names`), not the map's: the QDQ model, and so the blob, is the same on
    // every run.
    for name in &names {
        let Some(&(scale, zp)) = act.get(name) else {
            continue;
        };
        new_inits.push(tensor_f32(&format!("{name}_scale"), &[], &[scale]));
        new_inits.push(tensor_i8(&format!("{name}_zero_point"), &[], &[zp]));
        summary.activations += 1;
        if inputs.contains(name) {
            let dq = format!("{name}_dequantized");
            head.push(quantize(name, &format!("{name}_quantized"), name));
            head.push(dequantize(name, &dq, None));
            renamed_inputs.insert(name.clone(), dq);
        }
    }
    let mut nodes = head;
    for mut n in std::mem::take(&mut g.node) {
        for i in n.input.iter_mut() {
            if let Some(r) = renamed_inputs.get(i) {
                *i = r.clone();
            }
        }
        let pair = n
            .output
            .first()
            .filter(|o| act.contains_key(*o) && !inputs.contains(*o))
            .cloned();
        match pair {
            Some(out) => {
                let float = format!("{out}_float");
                n.output[0] = float.clone();
                nodes.push(n);
                nodes.push(quantize(&out, &format!("{out}_quantized"), &float));
                nodes.push(dequantize(&out, &out, None));
            }
            None => nodes.push(n),
        }
    }
    g.node = nodes;
    // Weights and biases that became node outputs are no longer graph inputs (old IR versions list them).
    g.input
        .retain(|v| !weight_scales.contains_key(&v.name) && !done_bias.contains(&v.name));
    let mut kept: Vec<TensorProto> = init.into_values().collect();
    kept.sort_by(|a, b| a.name.cmp(&b.name));
    kept.extend(new_inits);
    g.initializer = kept;
    Ok((model.encode_to_vec(), summary))
}

/// The tensor of a default-domain `Constant` node that holds it in a `value` attribute (not the
/// `value_float`-style forms), with one output.
fn constant_value(n: &NodeProto) -> Option<TensorProto> {
    if n.op_type != "Constant" || !is_default_domain(&n.domain) || n.output.len() != 1 {
        return None;
    }
    match n.attribute.as_slice() {
        [a] if a.name == "value" => a.t.clone(),
        _ => None,
    }
}

/// `QuantizeLinear(input, {base}_scale, {base}_zero_point) -> output`.
fn quantize(base: &str, output: &str, input: &str) -> NodeProto {
    NodeProto {
        input: vec![
            input.to_string(),
            format!("{base}_scale"),
            format!("{base}_zero_point"),
        ],
        output: vec![output.to_string()],
        name: format!("{base}_QuantizeLinear"),
        op_type: "QuantizeLinear".into(),
        ..NodeProto::default()
    }
}

/// `DequantizeLinear({base}_quantized, {base}_scale, {base}_zero_point) -> output`, per `axis` if given.
fn dequantize(base: &str, output: &str, axis: Option<i64>) -> NodeProto {
    NodeProto {
        input: vec![
            format!("{base}_quantized"),
            format!("{base}_scale"),
            format!("{base}_zero_point"),
        ],
        output: vec![output.to_string()],
        name: format!("{base}_DequantizeLinear"),
        op_type: "DequantizeLinear".into(),
        attribute: axis
            .map(|a| AttributeProto {
                name: "axis".into(),
                r#type: attribute_type::INT,
                i: Some(a),
                ..AttributeProto::default()
            })
            .into_iter()
            .collect(),
        ..NodeProto::default()
    }
}
