//! ONNX import: decodes a `ModelProto` ([`proto`]), gives every graph input a static shape
//! ([`inputs`]), reads the initializers ([`tensor`]), and converts node by node through the op
//! importers in [`ops`], inferring every shape on the way (the model's `value_info` is not needed).

pub mod inputs;
mod node;
pub mod ops;
pub mod proto;
pub mod tensor;

use std::collections::{HashMap, HashSet};

use prost::Message;

use crate::ir::Graph;
use crate::onnx::node::{Importer, NodeCtx};
use crate::onnx::proto::{data_type, DimensionValue, ModelProto, TypeValue, ValueInfoProto};
use crate::{ConvertError, ConvertOptions};

/// Oldest default-domain opset the importer accepts (older ones broadcast differently).
pub const MIN_OPSET: i64 = 7;
/// Newest default-domain opset the importers were written against.
pub const MAX_TESTED_OPSET: i64 = 23;

/// True for the names of the default ONNX domain.
pub fn is_default_domain(d: &str) -> bool {
    d.is_empty() || d == "ai.onnx"
}

/// The names of the graph's runtime inputs (its inputs that no initializer provides), in order, read
/// without importing anything (so a model whose inputs still need `--shape` can be asked).
pub fn graph_input_names(bytes: &[u8]) -> Result<Vec<String>, ConvertError> {
    let model = ModelProto::decode(bytes).map_err(|e| ConvertError::Decode {
        reason: e.to_string(),
    })?;
    let graph = model.graph.unwrap_or_default();
    let initializers: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    Ok(graph
        .input
        .iter()
        .filter(|vi| !initializers.contains(vi.name.as_str()))
        .map(|vi| vi.name.clone())
        .collect())
}

/// Decodes `bytes` and imports the graph. Notices (defaults taken, things ignored) go to `notices`.
pub fn import(
    bytes: &[u8],
    opts: &ConvertOptions,
    notices: &mut Vec<String>,
) -> Result<Graph, ConvertError> {
    import_summarized(bytes, opts, notices).map(|(g, _)| g)
}

/// What the import did besides building the graph (for the pass log).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Nodes of the ONNX graph.
    pub onnx_nodes: usize,
    /// ONNX nodes computed at conversion time (their output is a constant), as `name (OpType)`.
    pub folded: Vec<String>,
    /// ONNX nodes whose output is another value (no IR node, not a constant), as `name (OpType)`.
    pub aliased: Vec<String>,
}

/// [`import`], also saying which ONNX nodes were folded into constants.
pub fn import_summarized(
    bytes: &[u8],
    opts: &ConvertOptions,
    notices: &mut Vec<String>,
) -> Result<(Graph, ImportSummary), ConvertError> {
    let model = ModelProto::decode(bytes).map_err(|e| ConvertError::Decode {
        reason: e.to_string(),
    })?;
    let model_err = |reason: String| ConvertError::Model { reason };
    let opsets: HashMap<String, i64> = model
        .opset_import
        .iter()
        .map(|o| {
            let d = if is_default_domain(&o.domain) {
                ""
            } else {
                &o.domain
            };
            (d.to_string(), o.version)
        })
        .collect();
    let opset = *opsets.get("").ok_or_else(|| {
        model_err(format!(
            "the model imports no opset of the default ONNX domain (IR version {}); re-export it \
             with a current exporter",
            model.ir_version
        ))
    })?;
    if opset < MIN_OPSET {
        return Err(model_err(format!(
            "opset {opset} is older than {MIN_OPSET}, the oldest Ember reads; upgrade the model with \
             onnx.version_converter.convert_version(model, 13)"
        )));
    }
    if opset > MAX_TESTED_OPSET {
        notices.push(format!(
            "the model uses opset {opset}; the importers were written for opsets {MIN_OPSET} to \
             {MAX_TESTED_OPSET}"
        ));
    }
    let graph = model
        .graph
        .ok_or_else(|| model_err("the file holds no graph".to_string()))?;

    let mut imp = Importer {
        graph: Graph::new(opset),
        values: HashMap::new(),
        unavailable: HashMap::new(),
        notices: Vec::new(),
        max_counts: opts.max_counts.iter().cloned().collect(),
        max_trips: opts.max_trips.iter().cloned().collect(),
        opsets: opsets.clone(),
    };
    for init in &graph.initializer {
        if init.name.is_empty() {
            return Err(model_err("an initializer has no name".to_string()));
        }
        if imp.values.contains_key(&init.name) {
            return Err(ConvertError::Tensor {
                name: init.name.clone(),
                reason: "two initializers have this name".to_string(),
            });
        }
        let (shape, data, dtype) = tensor::read_tensor_typed(init, &init.name)?;
        let id = imp.graph.add_constant_of(&init.name, shape, data, dtype);
        imp.values.insert(init.name.clone(), id);
    }

    let mut overrides: HashMap<&str, &[usize]> = HashMap::new();
    for (name, dims) in &opts.shapes {
        if overrides.insert(name.as_str(), dims.as_slice()).is_some() {
            return Err(ConvertError::Input {
                name: name.clone(),
                reason: "--shape is given twice for this input".to_string(),
            });
        }
    }
    let mut used_overrides = HashSet::new();
    for vi in &graph.input {
        // Older files list the initializers among the inputs too; those are constants. From IR
        // version 4 on, such an input is an overridable default, which Ember freezes.
        if imp.values.contains_key(&vi.name) {
            if model.ir_version >= 4 {
                imp.notices.push(format!(
                    "input \"{}\" has an initializer; it is treated as a constant",
                    vi.name
                ));
            }
            continue;
        }
        if vi.name.is_empty() {
            return Err(model_err("a graph input has no name".to_string()));
        }
        let over = overrides.get(vi.name.as_str()).copied();
        if over.is_some() {
            used_overrides.insert(vi.name.as_str());
        }
        let shape = inputs::input_shape(vi, over, &mut imp.notices)?;
        let id = imp
            .graph
            .add_activation_of(&vi.name, shape, inputs::input_dtype(vi));
        imp.graph.inputs.push(id);
        imp.values.insert(vi.name.clone(), id);
    }
    if let Some((name, _)) = opts
        .shapes
        .iter()
        .find(|(n, _)| !used_overrides.contains(n.as_str()))
    {
        let known: Vec<&str> = imp
            .graph
            .inputs
            .iter()
            .map(|&i| imp.graph.tensor(i).name.as_str())
            .collect();
        return Err(ConvertError::Input {
            name: name.clone(),
            reason: format!(
                "--shape names no graph input of the model; its inputs are: {}",
                known.join(", ")
            ),
        });
    }

    let mut summary = ImportSummary {
        onnx_nodes: graph.node.len(),
        ..ImportSummary::default()
    };
    for (index, node) in graph.node.iter().enumerate() {
        let name = if node.name.is_empty() {
            format!("{}_{index}", node.op_type)
        } else {
            node.name.clone()
        };
        let nodes_before = imp.graph.nodes.len();
        let mut ctx = NodeCtx::new(&mut imp, node, name, opset);
        ops::import_node(&mut ctx, &opsets)?;
        let name = ctx.name;
        if imp.graph.nodes.len() == nodes_before {
            let what = format!("{name} ({})", node.op_type);
            let out = node.output.first().and_then(|o| imp.values.get(o));
            if out.is_some_and(|&t| imp.graph.is_const(t)) {
                summary.folded.push(what);
            } else {
                summary.aliased.push(what);
            }
        }
    }

    for vi in &graph.output {
        let out_err = |reason: String| ConvertError::Output {
            name: vi.name.clone(),
            reason,
        };
        let Some(&id) = imp.values.get(&vi.name) else {
            return Err(out_err(match imp.unavailable.get(&vi.name) {
                Some(why) => why.clone(),
                None => "is not produced by any node, initializer or input".to_string(),
            }));
        };
        check_declared_output(vi, imp.graph.tensor(id), &mut imp.notices).map_err(out_err)?;
        imp.graph.outputs.push(id);
    }
    for name in &opts.observe {
        if let Some(&id) = imp.values.get(name) {
            if !imp.graph.is_const(id) && !imp.graph.observed.contains(&id) {
                imp.graph.observed.push(id);
            }
        }
    }
    notices.append(&mut imp.notices);
    Ok((imp.graph, summary))
}

/// Checks a graph output's declared type; a declared static shape that differs from the inferred
/// one gives a notice (the inferred one is used).
fn check_declared_output(
    vi: &ValueInfoProto,
    tensor: &crate::ir::Tensor,
    notices: &mut Vec<String>,
) -> Result<(), String> {
    let inferred = tensor.shape.as_slice();
    let Some(TypeValue::TensorType(tt)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
        return Ok(());
    };
    let declared = tensor::dtype_of(tt.elem_type);
    if tt.elem_type != 0 && declared != Some(tensor.dtype) {
        return Err(format!(
            "has element type {} but Ember computes it as {}",
            data_type::name(tt.elem_type),
            data_type::name(tensor::onnx_type(tensor.dtype))
        ));
    }
    let Some(shape) = &tt.shape else {
        return Ok(());
    };
    let conflicts = shape.dim.len() != inferred.len()
        || shape.dim.iter().zip(inferred).any(|(d, &v)| {
            matches!(d.value, Some(DimensionValue::DimValue(x)) if x > 0 && usize::try_from(x) != Ok(v))
        });
    if conflicts {
        notices.push(format!(
            "output \"{}\": the model declares a shape that differs from the inferred {inferred:?}; \
             using {inferred:?}",
            vi.name
        ));
    }
    Ok(())
}
