//! Calibration: the range of every quantizable tensor over sample inputs, measured by running the float
//! model with Ember's own runtime.

use std::collections::{HashMap, HashSet};

use prost::Message;

use super::{model_err, FUSED_CONSUMERS, QUANTIZED_OUTPUTS};
use crate::onnx::proto::{data_type, ModelProto, TypeValue, ValueInfoProto};
use crate::{convert, ConvertError, ConvertOptions};

/// How a tensor's range is taken from its calibration values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Calibration {
    /// The smallest and largest value seen.
    MinMax,
    /// The given percentile (e.g. 99.99) of the values from above, and the complementary one from below.
    Percentile(f32),
}

/// The calibrated range of each tensor, by ONNX value name.
pub type Ranges = HashMap<String, (f32, f32)>;

/// Values kept per tensor for a percentile (strided beyond this, so memory stays bounded).
const MAX_KEPT: usize = 1 << 20;

/// The names of the tensors that get a Quantize/Dequantize pair: the float graph inputs and the
/// outputs of the [`QUANTIZED_OUTPUTS`] ops, except those read only by a fused op, and except values
/// that are constants (computed from initializers and tensor shapes alone: every shape is fixed at
/// conversion, so a `Shape` or `Size` output and the shape arithmetic on it are folded, never computed).
pub(crate) fn quantized_tensors(model: &ModelProto) -> Vec<String> {
    let Some(g) = &model.graph else {
        return Vec::new();
    };
    let mut constant: HashSet<&str> = g.initializer.iter().map(|t| t.name.as_str()).collect();
    for n in &g.node {
        let all_const = matches!(n.op_type.as_str(), "Constant" | "Shape" | "Size")
            || (!n.input.is_empty()
                && n.input
                    .iter()
                    .all(|i| i.is_empty() || constant.contains(i.as_str())));
        if all_const {
            constant.extend(n.output.iter().map(String::as_str));
        }
    }
    let mut readers: HashMap<&str, Vec<&str>> = HashMap::new();
    for n in &g.node {
        for i in &n.input {
            readers
                .entry(i.as_str())
                .or_default()
                .push(n.op_type.as_str());
        }
    }
    let outputs: HashSet<&str> = g.output.iter().map(|o| o.name.as_str()).collect();
    let fused_only = |name: &str| {
        !outputs.contains(name)
            && readers
                .get(name)
                .is_some_and(|r| r.len() == 1 && FUSED_CONSUMERS.contains(&r[0]))
    };
    // A product divided by a scalar constant and read by nothing else (HardSwish written out, `x *
    // relu6(x + 3) / 6`): the QDQ pass folds the division into the product's int8 Mul, so the
    // product gets no pair of its own and is rounded once.
    let scalars: HashSet<&str> = g
        .initializer
        .iter()
        .filter(|t| t.dims.iter().product::<i64>() == 1)
        .map(|t| t.name.as_str())
        .chain(g.node.iter().filter_map(|n| {
            let value = n.attribute.iter().find(|a| a.name == "value")?.t.as_ref()?;
            (n.op_type == "Constant" && value.dims.iter().product::<i64>() == 1)
                .then(|| n.output.first().map(String::as_str))?
        }))
        .collect();
    let divided: HashSet<&str> = g
        .node
        .iter()
        .filter(|n| {
            n.op_type == "Div" && n.input.get(1).is_some_and(|c| scalars.contains(c.as_str()))
        })
        .filter_map(|n| n.input.first().map(String::as_str))
        .collect();
    let divided_product = |op: &str, name: &str| {
        op == "Mul"
            && divided.contains(name)
            && !outputs.contains(name)
            && readers.get(name).is_some_and(|r| r.len() == 1)
    };
    let mut names = Vec::new();
    for vi in &g.input {
        let float = matches!(
            vi.r#type.as_ref().and_then(|t| t.value.as_ref()),
            Some(TypeValue::TensorType(t)) if t.elem_type == data_type::FLOAT
        );
        if float && !constant.contains(vi.name.as_str()) && !fused_only(&vi.name) {
            names.push(vi.name.clone());
        }
    }
    for n in &g.node {
        let Some(out) = n.output.first() else {
            continue;
        };
        // Sub and Div run on int8 when their second operand is a constant (the QDQ pass quantizes
        // it, negated or inverted), Max and Min when one is a scalar constant (a table); between
        // two activations a pair would only round.
        let by_constant = (matches!(n.op_type.as_str(), "Sub" | "Div")
            && n.input
                .get(1)
                .is_some_and(|b| constant.contains(b.as_str())))
            || (matches!(n.op_type.as_str(), "Max" | "Min")
                && n.input.len() == 2
                && n.input.iter().any(|i| scalars.contains(i.as_str())));
        if (QUANTIZED_OUTPUTS.contains(&n.op_type.as_str()) || by_constant)
            && !out.is_empty()
            && !constant.contains(out.as_str())
            && !fused_only(out)
            && !divided_product(&n.op_type, out)
        {
            names.push(out.clone());
        }
    }
    names
}

/// Runs the float model on every sample (`samples[k][i]`: the values of graph input `i` for sample `k`,
/// in the shapes `opts` gives or the model declares) and returns the range of every quantized tensor.
/// `progress(done, total)` is called after each sample.
pub fn calibrate(
    onnx: &[u8],
    opts: &ConvertOptions,
    samples: &[Vec<Vec<f32>>],
    method: Calibration,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Ranges, ConvertError> {
    if samples.is_empty() {
        return Err(model_err("calibration needs at least one sample"));
    }
    let mut model = ModelProto::decode(onnx).map_err(|e| model_err(format!("{e}")))?;
    let names = quantized_tensors(&model);
    let graph = model
        .graph
        .as_mut()
        .ok_or_else(|| model_err("the model holds no graph"))?;
    let inputs: Vec<String> = graph
        .input
        .iter()
        .map(|v| v.name.clone())
        .filter(|n| !graph.initializer.iter().any(|t| &t.name == n))
        .collect();
    // Every op's output is observed as the session writes it, so no tensor has to become a graph
    // output (a blob has at most 16); the conversion keeps the measured values as tensors of their
    // own (`ConvertOptions::observe`). One it still does not write under its name is made a graph
    // output, and the model converted again.
    let mut observed = Observed::new(&model, opts, &names)?;
    if !observed.missing.is_empty() {
        let graph = model
            .graph
            .as_mut()
            .ok_or_else(|| model_err("the model holds no graph"))?;
        for name in &observed.missing {
            graph.output.push(ValueInfoProto::float_unshaped(name));
        }
        observed = Observed::new(&model, opts, &names)?;
        if let Some(name) = observed.missing.first() {
            return Err(ConvertError::internal(format!(
                "calibration: tensor \"{name}\" is not computed by the converted model"
            )));
        }
    }
    let Observed {
        converted,
        blob,
        watched,
        ..
    } = observed;
    let m = ember_core::Model::parse(blob.as_bytes())
        .map_err(|e| ConvertError::internal(format!("the calibration blob does not parse: {e}")))?;
    let mut arena = ember_core::AlignedBuf::zeroed(m.arena_bytes());
    let mut session = ember_core::Session::new(&m, arena.as_mut_bytes())
        .map_err(|e| ConvertError::internal(format!("calibration session: {e}")))?;
    let input_order: Vec<usize> = converted
        .report
        .inputs
        .iter()
        .map(|(n, _)| inputs.iter().position(|i| i == n).unwrap_or(usize::MAX))
        .collect();

    let mut stats: HashMap<String, Stats> = HashMap::new();
    let keep_all = method != Calibration::MinMax;
    for (k, sample) in samples.iter().enumerate() {
        for (slot, &i) in input_order.iter().enumerate() {
            let values = sample.get(i).ok_or_else(|| {
                model_err(format!(
                    "calibration sample {k} has {} inputs; the model has {}",
                    sample.len(),
                    inputs.len()
                ))
            })?;
            session
                .input(slot)
                .and_then(|mut t| t.write_f32(values))
                .map_err(|e| {
                    model_err(format!(
                        "calibration sample {k}, input \"{}\": {e}",
                        inputs.get(i).map_or("?", String::as_str)
                    ))
                })?;
            if names.contains(&inputs[i]) {
                stats
                    .entry(inputs[i].clone())
                    .or_insert_with(Stats::new)
                    .add(values, keep_all);
            }
        }
        let mut failed = None;
        session
            .run_observed(&mut |_, tensor, t| {
                let Some(name) = watched.get(&tensor) else {
                    return;
                };
                match t.as_f32() {
                    Ok(values) => stats
                        .entry(name.clone())
                        .or_insert_with(Stats::new)
                        .add(values, keep_all),
                    Err(e) => failed = Some(format!("calibration tensor {name}: {e}")),
                }
            })
            .map_err(|e| ConvertError::internal(format!("calibration run: {e}")))?;
        if let Some(reason) = failed {
            return Err(ConvertError::internal(reason));
        }
        progress(k + 1, samples.len());
    }

    let mut ranges = Ranges::new();
    for (name, st) in stats {
        if let Some(range) = st.range(method) {
            ranges.insert(name, range);
        }
    }
    Ok(ranges)
}

/// The float model converted for calibration, and which of its tensors hold the quantized values.
struct Observed {
    converted: crate::Converted,
    blob: ember_core::AlignedBuf,
    /// Tensor id in the blob to the ONNX value it holds, for the values calibration measures.
    watched: HashMap<u32, String>,
    /// The values to measure that no op of the blob writes under their name (graph inputs aside).
    missing: Vec<String>,
}

impl Observed {
    fn new(
        model: &ModelProto,
        opts: &ConvertOptions,
        names: &[String],
    ) -> Result<Self, ConvertError> {
        let opts = ConvertOptions {
            keep_names: true,
            observe: names.to_vec(),
            ..opts.clone()
        };
        let converted = convert(&model.encode_to_vec(), &opts)?;
        let blob = ember_core::AlignedBuf::from_bytes(&converted.blob);
        let m = ember_core::Model::parse(blob.as_bytes()).map_err(|e| {
            ConvertError::internal(format!("the calibration blob does not parse: {e}"))
        })?;
        let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
        let inputs: HashSet<&str> = converted
            .report
            .inputs
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        let mut watched = HashMap::new();
        for i in 0..m.op_count() {
            let Some(op) = m.op(i) else { continue };
            if let Some(name) = m
                .tensor_name(op.output as usize)
                .filter(|n| wanted.contains(n))
            {
                watched.insert(op.output, name.to_string());
            }
        }
        let found: HashSet<&str> = watched.values().map(String::as_str).collect();
        let missing = names
            .iter()
            .filter(|n| !found.contains(n.as_str()) && !inputs.contains(n.as_str()))
            .cloned()
            .collect();
        Ok(Observed {
            converted,
            blob,
            watched,
            missing,
        })
    }
}

/// What calibration keeps of one tensor: its exact min and max, and for percentiles a uniform sample of
/// at most [`MAX_KEPT`] values (reservoir sampling with a fixed-seed generator, so runs repeat).
struct Stats {
    min: f32,
    max: f32,
    kept: Vec<f32>,
    count: u64,
    rng: u64,
}

impl Stats {
    fn new() -> Self {
        Stats {
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            kept: Vec::new(),
            count: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn add(&mut self, values: &[f32], sample: bool) {
        for &x in values.iter().filter(|x| x.is_finite()) {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
            if !sample {
                continue;
            }
            self.count += 1;
            if self.kept.len() < MAX_KEPT {
                self.kept.push(x);
                continue;
            }
            // xorshift64
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let j = (self.rng % self.count) as usize;
            if j < MAX_KEPT {
                self.kept[j] = x;
            }
        }
    }

    fn range(mut self, method: Calibration) -> Option<(f32, f32)> {
        if self.min > self.max {
            return None;
        }
        match method {
            Calibration::MinMax => Some((self.min, self.max)),
            Calibration::Percentile(p) => {
                let v = &mut self.kept;
                v.sort_by(f32::total_cmp);
                let p = f64::from(p.clamp(50.0, 100.0)) / 100.0;
                let last = v.len() - 1;
                let hi = ((last as f64) * p).round() as usize;
                let lo = ((last as f64) * (1.0 - p)).round() as usize;
                Some((v[lo.min(last)], v[hi.min(last)]))
            }
        }
    }
}
