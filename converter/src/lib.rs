//! # ember-convert
//!
//! Ember's host-side converter: it turns an ONNX model (or a TFLite one, [`tflite`]) into a `.ember` blob
//! that `ember-core` runs.
//!
//! The pipeline, one module per step:
//! 1. [`onnx`]: decode the protobuf (hand-written `prost` messages), give every input a static shape,
//!    and import each node into the graph IR ([`ir`]), inferring shapes as it goes;
//! 2. [`passes`]: remove identities, fuse activations, move spatial ops to NHWC, simplify transposes
//!    and reshapes, drop dead nodes;
//! 3. [`lower`]: map to the blob's closed op set, lay out the weights, and plan the activation arena
//!    ([`plan`]);
//! 4. write the blob with `ember_core::format::write::write_blob`.
//!
//! A `.tflite` file goes through [`tflite`] instead of step 1 (planus's reader generated from TFLite's
//! schema, lowered op by op into the same IR, already channels-last), then through steps 2-4.
//!
//! Trained weights from a checkpoint ([`weights`]: safetensors, PyTorch, npz) replace a graph's
//! initializers in a step before conversion ([`bind`]), which also merges LoRA adapters. Without an
//! ONNX graph, an architecture written in Rust with [`build`] (or a Hugging Face model folder,
//! [`build::hf`]) takes its weights from a checkpoint by name and goes through the same steps 2-4
//! ([`convert_built`]).
//!
//! ```no_run
//! let onnx = std::fs::read("model.onnx").unwrap();
//! let out = ember_convert::convert(&onnx, &ember_convert::ConvertOptions::default()).unwrap();
//! println!("arena {} bytes", out.report.arena.activation_bytes);
//! std::fs::write("model.ember", &out.blob).unwrap();
//! ```
#![warn(missing_docs)]

pub mod bind;
pub mod build;
mod error;
pub mod ir;
pub mod lower;
pub mod onnx;
pub mod passes;
pub mod plan;
pub mod quantize;
pub mod tflite;
pub mod variants;
pub mod weights;

use ember_core::format::write::{write_blob, BlobParts};
use ember_core::format::{ArenaPlan, ModelInfo};

pub use ember_core::ops::quant::requant::RequantRounding;
pub use error::ConvertError;
pub use passes::PassRecord;

/// Options of a conversion.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertOptions {
    /// Static shapes for graph inputs (`--shape NAME=d0,d1,...`): each fixes every dim of the named
    /// input and must have its rank.
    pub shapes: Vec<(String, Vec<usize>)>,
    /// Write the optional names table (tensor names, then node names) into the blob.
    pub keep_names: bool,
    /// How int8 ops round when they requantize (`--rounding`): [`RequantRounding::Single`] by default, which
    /// agrees with onnxruntime; [`RequantRounding::Double`] gives TFLM's reference results bit for bit.
    pub rounding: RequantRounding,
    /// ONNX values to keep as tensors of their own (no pass fuses them into a neighbour or folds them
    /// away), under their names, so that `Session::run_observed` sees each one: what calibration
    /// measures, and what a per-layer comparison reads. Empty by default: every fusion applies.
    pub observe: Vec<String>,
    /// The most values an op with a data-dependent count may output (`--max-count NAME=N`), by the
    /// name of its (first) ONNX output or of its node: NonZero (`[rank, N]`) and
    /// NonMaxSuppression (`[N, 3]`). Ember plans static shapes, so such an output has room for `N`;
    /// the entries past the actual count hold -1. Converting a model with such an op and no maximum
    /// for it is an error naming the option.
    pub max_counts: Vec<(String, usize)>,
    /// The most iterations of a `Loop` whose trip count (or condition) is computed at run time
    /// (`--max-trip NAME=N`), by the name of its node or of one of its outputs. Its body is planned
    /// once and its stacked outputs for `N` iterations; a run whose trip count is above it is an error
    /// (`Error::LoopBound`), never a truncation.
    pub max_trips: Vec<(String, usize)>,
    /// Shape variants (`--dim NAME=V1,V2,...`): named dims with their values. Each `--shape` that
    /// uses a name ([`ConvertOptions::dim_shapes`]) takes its values in turn, and the blob holds one
    /// variant per combination ([`variants`]). Empty: one shape.
    pub dims: Vec<(String, Vec<usize>)>,
    /// `--shape` arguments that use a name of `dims` (`x=1,3,48,W`).
    pub dim_shapes: Vec<(String, Vec<variants::ShapeDim>)>,
    /// Graph inputs a session may pad to a larger variant's shape, with the value to pad with
    /// (`--pad NAME=VALUE`: a sequence's ids and attention mask with 0, an image strip with its
    /// background). Only with `dims`; an input without one must be given in a variant's exact shape.
    pub pads: Vec<(String, f64)>,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            shapes: Vec::new(),
            keep_names: true,
            rounding: RequantRounding::Single,
            observe: Vec::new(),
            max_counts: Vec::new(),
            max_trips: Vec::new(),
            dims: Vec::new(),
            dim_shapes: Vec::new(),
            pads: Vec::new(),
        }
    }
}

impl ConvertOptions {
    /// Parses a `--shape` argument, `NAME=d0,d1,...` (e.g. `input=360,1,8,8`): the one parser of
    /// `--shape` (the CLI and the examples call it). The dims follow the last `=`, so a name may hold
    /// one; `0` is an empty dim.
    pub fn parse_shape(arg: &str) -> Result<(String, Vec<usize>), String> {
        let Some((name, dims)) = arg.rsplit_once('=').filter(|(name, _)| !name.is_empty()) else {
            return Err(format!(
                "--shape {arg:?}: expected NAME=DIMS, for example --shape input=1,3,224,224"
            ));
        };
        let dims = dims
            .split(',')
            .map(|d| d.trim().parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                format!(
                    "--shape {arg:?}: dimensions must be whole numbers separated by commas (0 for \
                     an empty dim)"
                )
            })?;
        Ok((name.to_string(), dims))
    }

    /// Parses a `--pad` argument, `NAME=VALUE` (`attention_mask=0`).
    pub fn parse_pad(arg: &str) -> Result<(String, f64), String> {
        arg.rsplit_once('=')
            .filter(|(name, _)| !name.is_empty())
            .and_then(|(name, v)| Some((name.to_string(), v.trim().parse::<f64>().ok()?)))
            .filter(|(_, v)| v.is_finite())
            .ok_or_else(|| {
                format!("--pad {arg:?}: expected NAME=VALUE, for example --pad attention_mask=0")
            })
    }

    /// Parses a `--max-count` argument, `NAME=N` (e.g. `selected=100`): the name of an output of a
    /// NonZero or NonMaxSuppression node (or the node's name), and the most values it may hold.
    pub fn parse_max_count(arg: &str) -> Result<(String, usize), String> {
        parse_name_count(arg, "--max-count", "selected=100")
    }

    /// Parses a `--max-trip` argument, `NAME=N` (e.g. `decoder_loop=64`): the name of a `Loop` node
    /// (or of one of its outputs), and the most iterations it may run.
    pub fn parse_max_trip(arg: &str) -> Result<(String, usize), String> {
        parse_name_count(arg, "--max-trip", "decoder_loop=64")
    }
}

/// What a conversion produced, besides the blob.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertReport {
    /// Things the user should know: defaults taken (e.g. a dynamic batch set to 1), values ignored.
    pub notices: Vec<String>,
    /// The memory plan written into the blob.
    pub arena: ArenaPlan,
    /// Activation bytes TFLM's greedy-by-size planner would need for the same tensors: the baseline
    /// `arena.activation_bytes` is never worse than (not written into the blob).
    pub greedy_activation_bytes: u32,
    /// Size of the blob.
    pub blob_bytes: usize,
    /// Size of the weights section (with alignment padding).
    pub weights_bytes: usize,
    /// Every op of the blob in execution order: (node name, Ember op name). Fused nodes are named
    /// `producer+activation`; nodes the converter adds are named after the tensor or node they serve.
    pub ops: Vec<(String, &'static str)>,
    /// Graph inputs with their (static, ONNX-layout) shapes.
    pub inputs: Vec<(String, Vec<usize>)>,
    /// Graph outputs with their (ONNX-layout) shapes.
    pub outputs: Vec<(String, Vec<usize>)>,
    /// What the import, every pass application (no-change ones too, with no changes) and the
    /// lowering did, in order; each record's `nodes_before` is the previous one's `nodes_after`.
    pub passes: Vec<PassRecord>,
    /// What weight-only int8 did ([`WeightStorage::Int8`]).
    pub weight_only: Option<quantize::WeightOnlySummary>,
    /// The blob's shape variants (`--dim`), in order; empty for a blob of one shape. The rest of the
    /// report is the largest variant's (the one a reader without variants runs).
    pub variants: Vec<variants::VariantReport>,
}

/// A converted model.
#[derive(Clone, Debug, PartialEq)]
pub struct Converted {
    /// The `.ember` blob.
    pub blob: Vec<u8>,
    /// What was done.
    pub report: ConvertReport,
}

/// The producer string written into every blob.
pub const PRODUCER: &str = concat!("ember-convert ", env!("CARGO_PKG_VERSION"));

/// How the converter stores the weights of fully connected layers and embedding tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeightStorage {
    /// As they are (f32).
    #[default]
    Float,
    /// Weight-only int8 (`--quantize int8-weights`): int8 per output channel with f32 scales,
    /// f32 activations; see [`quantize::weight_only`].
    Int8,
}

/// Parses `NAME=N` for `option` (`example` shows one).
fn parse_name_count(arg: &str, option: &str, example: &str) -> Result<(String, usize), String> {
    arg.rsplit_once('=')
        .filter(|(name, _)| !name.is_empty())
        .and_then(|(name, n)| Some((name.to_string(), n.trim().parse::<usize>().ok()?)))
        .ok_or_else(|| format!("{option} {arg:?}: expected NAME=N, for example {option} {example}"))
}

/// Converts an ONNX model (the bytes of an `.onnx` file) or a TFLite model (a `.tflite` file,
/// recognised by its file identifier; [`tflite`]) into a blob.
pub fn convert(onnx_bytes: &[u8], opts: &ConvertOptions) -> Result<Converted, ConvertError> {
    convert_with(onnx_bytes, opts, WeightStorage::Float)
}

/// [`convert`], storing the weights as `weights` says.
pub fn convert_with(
    onnx_bytes: &[u8],
    opts: &ConvertOptions,
    weights: WeightStorage,
) -> Result<Converted, ConvertError> {
    let one = |opts: &ConvertOptions| {
        let mut notices = Vec::new();
        let (graph, imported) = if tflite::is_tflite(onnx_bytes) {
            tflite::import_summarized(onnx_bytes, opts, &mut notices)?
        } else {
            onnx::import_summarized(onnx_bytes, opts, &mut notices)?
        };
        let record = passes::log::import_record(&imported, &graph);
        lower_graph(graph, record, notices, fnv1a64(onnx_bytes), opts, weights)
    };
    if opts.dims.is_empty() && opts.dim_shapes.is_empty() {
        variants::no_pads(opts)?;
        write_one(one(opts)?, opts)
    } else {
        variants::convert(opts, one)
    }
}

/// Converts a graph described in Rust ([`build`]: an architecture whose weights come from a
/// checkpoint, or a Hugging Face model folder) into a blob: the same passes, quantization, lowering
/// and memory planning as [`convert`] after its import. `opts.shapes` is not read (the builder gave
/// every input its shape).
pub fn convert_built(
    built: build::Built,
    opts: &ConvertOptions,
    weights: WeightStorage,
) -> Result<Converted, ConvertError> {
    if !opts.dims.is_empty() || !opts.dim_shapes.is_empty() {
        return Err(ConvertError::Dims {
            reason: "a built graph has the input shapes its builder gave; build one graph per \
                     shape and convert them with `variants::convert` (as `build::hf` does)"
                .into(),
        });
    }
    variants::no_pads(opts)?;
    write_one(lower_built(built, opts, weights)?, opts)
}

/// [`convert_built`] up to the blob.
pub(crate) fn lower_built(
    built: build::Built,
    opts: &ConvertOptions,
    weights: WeightStorage,
) -> Result<LoweredGraph, ConvertError> {
    let build::Built {
        graph,
        notices,
        source_hash,
        ..
    } = built;
    let record = passes::log::build_record(&graph);
    lower_graph(graph, record, notices, source_hash, opts, weights)
}

/// One graph lowered: its tables and weights, and its report (without the blob's size).
pub(crate) struct LoweredGraph {
    pub(crate) lowered: lower::Lowered,
    pub(crate) report: ConvertReport,
    pub(crate) source_hash: u64,
}

impl LoweredGraph {
    /// The info record of the lowered graph.
    pub(crate) fn info(&self) -> Result<ModelInfo<'static>, ConvertError> {
        let l = &self.lowered;
        let count =
            |n: usize| u32::try_from(n).map_err(|_| ConvertError::limit("too many records"));
        Ok(ModelInfo {
            producer: PRODUCER.as_bytes(),
            source_hash: self.source_hash,
            tensor_count: count(l.tensors.len())?,
            op_count: count(l.ops.len())?,
            // `lower` checked that there are at most MAX_GRAPH_IO of each, so these collects fit.
            inputs: l.inputs.iter().copied().collect(),
            outputs: l.outputs.iter().copied().collect(),
            arena: l.arena,
        })
    }

    /// The names table (tensor names, then op names).
    pub(crate) fn names(&self) -> Vec<&str> {
        let l = &self.lowered;
        l.tensor_names
            .iter()
            .chain(&l.op_names)
            .map(String::as_str)
            .collect()
    }
}

/// The blob of one lowered graph.
pub(crate) fn write_one(
    one: LoweredGraph,
    opts: &ConvertOptions,
) -> Result<Converted, ConvertError> {
    let info = one.info()?;
    let names = one.names();
    let lowered = &one.lowered;
    let blob = write_blob(&BlobParts {
        info: &info,
        tensors: &lowered.tensors,
        ops: &lowered.ops,
        weights: &lowered.weights,
        names: opts.keep_names.then_some(names.as_slice()),
        variants: None,
    })
    .map_err(|e| ConvertError::limit(format!("writing the blob: {e}")))?;
    let mut report = one.report;
    report.blob_bytes = blob.len();
    Ok(Converted { blob, report })
}

/// Everything after the import: passes, weight storage, lowering.
pub(crate) fn lower_graph(
    mut graph: ir::Graph,
    imported: PassRecord,
    mut notices: Vec<String>,
    source_hash: u64,
    opts: &ConvertOptions,
    weights: WeightStorage,
) -> Result<LoweredGraph, ConvertError> {
    let mut pass_log = vec![imported];
    pass_log.extend(passes::run(&mut graph)?);
    let weight_only = match weights {
        WeightStorage::Float => None,
        WeightStorage::Int8 => {
            let summary = quantize::weight_only_int8(&mut graph)?;
            notices.push(format!(
                "int8-weights: {} fully connected layer(s) and {} embedding table(s) in int8 per \
                 channel ({} bytes of f32 weights now {} bytes)",
                summary.layers, summary.embeddings, summary.f32_bytes, summary.int8_bytes
            ));
            for s in &summary.skipped {
                notices.push(format!("int8-weights: left in f32: {s}"));
            }
            Some(summary)
        }
    };
    let lowered = lower::lower(&graph, opts.rounding)?;

    let io = |ids: &[ir::TensorId]| -> Vec<(String, Vec<usize>)> {
        ids.iter()
            .map(|&t| (graph.tensor(t).name.clone(), graph.tensor(t).shape.clone()))
            .collect()
    };
    let mut report = ConvertReport {
        notices,
        arena: lowered.arena,
        greedy_activation_bytes: lowered.greedy_activation_bytes,
        blob_bytes: 0,
        weights_bytes: lowered.weights.len(),
        ops: lowered
            .op_names
            .iter()
            .zip(&lowered.ops)
            .map(|(n, op)| (n.clone(), op.kind.name()))
            .collect(),
        inputs: io(&graph.inputs),
        outputs: io(&graph.outputs),
        passes: pass_log,
        weight_only,
        variants: Vec::new(),
    };
    report
        .passes
        .push(passes::log::lower_record(&graph, &report.ops));
    Ok(LoweredGraph {
        lowered,
        report,
        source_hash,
    })
}

/// FNV-1a, 64-bit: the source-model hash recorded in the blob.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
