//! Binding a checkpoint's tensors to an ONNX graph's initializers, and merging a LoRA adapter: a step
//! before conversion that rewrites the ONNX model, so that everything after it (conversion,
//! calibration, quantization, `--emit`) sees the bound weights.
//!
//! Each initializer finds its tensor by name ([`names`]: exact, then up to wrapper prefixes, then
//! through `--rename` rules). A tensor binds when its shape is the initializer's, or is it up to
//! dims of size 1 (a PReLU slope saved `[C]` for an initializer `[C, 1, 1]`); its values are
//! converted to the initializer's element type (floats to floats, integers to integers in range).
//! Float initializers of more than one element must bind; integer and scalar initializers (shape
//! constants, epsilons) keep the graph's value when the checkpoint has none. Every problem is
//! collected and reported at once, naming each tensor. LoRA ([`lora`]) is merged after binding,
//! before any quantization.
//!
//! ```no_run
//! use ember_convert::{bind, weights::Checkpoint, convert, ConvertOptions};
//! let onnx = std::fs::read("graph.onnx").unwrap();
//! let file = std::fs::read("model.safetensors").unwrap();
//! let ckpt = Checkpoint::parse(&file).unwrap();
//! let bound = bind::bind(&onnx, Some(&ckpt), None, &bind::BindOptions::default()).unwrap();
//! for line in bound.report.lines() {
//!     println!("{line}");
//! }
//! let out = convert(&bound.onnx, &ConvertOptions::default()).unwrap();
//! # let _ = out;
//! ```

pub mod lora;
pub mod names;

use std::collections::{BTreeSet, HashMap};

use ember_core::half::{bf16, f16};
use prost::Message;

use crate::onnx::proto::{data_type, ModelProto, NodeProto, TensorProto};
use crate::weights::{Checkpoint, ElementType, Tensor};
use crate::ConvertError;
pub use lora::{Lora, LoraConfig};
pub use names::{Match, Rename};

/// ONNX's BFLOAT16 element type (not among [`data_type`]: the importer does not read it).
const ONNX_BFLOAT16: i32 = 16;

/// Options of [`bind`].
#[derive(Clone, Debug, Default)]
pub struct BindOptions {
    /// `--rename` rules, applied in order to checkpoint names.
    pub renames: Vec<Rename>,
    /// Checkpoint tensors that bind to nothing are an error rather than a notice.
    pub strict: bool,
}

/// One initializer given a checkpoint tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// The initializer.
    pub initializer: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its ONNX element type, e.g. `FLOAT`.
    pub onnx_type: &'static str,
    /// The checkpoint tensor.
    pub tensor: String,
    /// Its shape (differs from `shape` only in dims of size 1).
    pub tensor_shape: Vec<usize>,
    /// Its element type.
    pub dtype: ElementType,
    /// How the names met.
    pub how: Match,
}

/// One LoRA module merged.
#[derive(Clone, Debug, PartialEq)]
pub struct LoraMerge {
    /// The adapter's module path.
    pub module: String,
    /// The initializer updated.
    pub initializer: String,
    /// Rank.
    pub rank: usize,
    /// `scale * alpha / r`.
    pub factor: f64,
    /// True when the initializer is stored `[in, out]` and took the transpose of `B @ A`.
    pub transposed: bool,
    /// The node whose use of the weight decided the orientation (`name (OpType)`).
    pub consumer: String,
}

/// What [`bind`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BindReport {
    /// Initializers given a checkpoint tensor, in graph order.
    pub bound: Vec<Binding>,
    /// Initializers left with the graph's value (integer or scalar constants without a tensor).
    pub kept: Vec<String>,
    /// Checkpoint tensors bound to nothing.
    pub unused: Vec<String>,
    /// Checkpoint tensors a `--rename` rule dropped.
    pub dropped: Vec<String>,
    /// LoRA modules merged.
    pub lora: Vec<LoraMerge>,
    /// Things the user should see even without `--verbose`.
    pub notices: Vec<String>,
}

fn dims(shape: &[usize]) -> String {
    format!(
        "[{}]",
        shape
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl BindReport {
    /// The bindings read up to size-1 dims, as `"tensor" [checkpoint dims] -> [bound dims]` joined
    /// by commas, or `None` where every shape matched as it was.
    pub(crate) fn reshaped(&self) -> Option<String> {
        let reshaped: Vec<String> = self
            .bound
            .iter()
            .filter(|b| b.shape != b.tensor_shape)
            .map(|b| {
                format!(
                    "\"{}\" {} -> {}",
                    b.tensor,
                    dims(&b.tensor_shape),
                    dims(&b.shape)
                )
            })
            .collect();
        (!reshaped.is_empty()).then(|| reshaped.join(", "))
    }

    /// The report as lines of text (`ember convert --verbose`, `ember inspect --weights`).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.bound.is_empty() {
            out.push(format!("bound {} initializers:", self.bound.len()));
            for b in &self.bound {
                let reshaped = if b.shape != b.tensor_shape {
                    format!(" {} (equal up to size-1 dims)", dims(&b.tensor_shape))
                } else {
                    String::new()
                };
                out.push(format!(
                    "  {} {} {} <- {} {}{} ({})",
                    b.initializer,
                    dims(&b.shape),
                    b.onnx_type,
                    b.tensor,
                    b.dtype,
                    reshaped,
                    b.how.name()
                ));
            }
        }
        if !self.kept.is_empty() {
            out.push(format!(
                "kept the graph's value of {} constants without a tensor: {}",
                self.kept.len(),
                self.kept.join(", ")
            ));
        }
        if !self.dropped.is_empty() {
            out.push(format!("dropped by --rename: {}", self.dropped.join(", ")));
        }
        if !self.unused.is_empty() {
            out.push(format!(
                "unused checkpoint tensors: {}",
                self.unused.join(", ")
            ));
        }
        for m in &self.lora {
            out.push(format!(
                "LoRA: {} += {} * (B @ A){} (module {}, rank {}, as {} uses it)",
                m.initializer,
                m.factor,
                if m.transposed { "^T" } else { "" },
                m.module,
                m.rank,
                m.consumer
            ));
        }
        out
    }
}

/// The ONNX model with its weights replaced, and what was done.
#[derive(Clone, Debug)]
pub struct Bound {
    /// The rewritten `.onnx` bytes.
    pub onnx: Vec<u8>,
    /// What was bound, kept, unused and merged.
    pub report: BindReport,
}

/// Replaces the initializers of the ONNX model `onnx` by the tensors of `weights`, then merges
/// `lora`, and returns the rewritten model. Either may be `None`.
pub fn bind(
    onnx: &[u8],
    weights: Option<&Checkpoint<'_>>,
    lora: Option<&Lora<'_>>,
    opts: &BindOptions,
) -> Result<Bound, ConvertError> {
    let mut model = ModelProto::decode(onnx).map_err(|e| ConvertError::Decode {
        reason: e.to_string(),
    })?;
    let Some(graph) = model.graph.as_mut() else {
        return Err(ConvertError::Model {
            reason: "the file holds no graph".into(),
        });
    };
    let mut report = BindReport::default();
    if let Some(ckpt) = weights {
        bind_initializers(&mut graph.initializer, ckpt, opts, &mut report)?;
    }
    if let Some(lora) = lora {
        lora_merge(graph, lora, opts, &mut report)?;
    }
    Ok(Bound {
        onnx: model.encode_to_vec(),
        report,
    })
}

/// An initializer's dims as sizes.
fn shape_of(t: &TensorProto) -> Result<Vec<usize>, ConvertError> {
    t.dims
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| ConvertError::Tensor {
            name: t.name.clone(),
            reason: format!("negative dims {:?}", t.dims),
        })
}

fn squeezed(s: &[usize]) -> Vec<usize> {
    s.iter().copied().filter(|&d| d != 1).collect()
}

fn onnx_name(t: i32) -> &'static str {
    if t == ONNX_BFLOAT16 {
        "BFLOAT16"
    } else {
        data_type::name(t)
    }
}

/// The bytes of `t` as ONNX element type `to`, or why not.
fn encode(t: &Tensor<'_>, to: i32) -> Result<Vec<u8>, String> {
    let from = t.dtype();
    let cannot = |why: &str| {
        format!(
            "its element type {from} cannot be converted to the initializer's {}: {why}",
            onnx_name(to)
        )
    };
    let floats = |f: &dyn Fn(f64) -> Vec<u8>| -> Result<Vec<u8>, String> {
        if !from.is_float() {
            return Err(cannot(if from.is_integer() || from == ElementType::Bool {
                "integers do not bind to float weights"
            } else {
                "it has no real-valued conversion"
            }));
        }
        let v = t.to_f64().map_err(|e| e.to_string())?;
        Ok(v.into_iter().flat_map(f).collect())
    };
    let same = |e: ElementType| from == e;
    match to {
        data_type::FLOAT if same(ElementType::F32) => Ok(t.bytes().to_vec()),
        data_type::FLOAT => floats(&|x| (x as f32).to_le_bytes().to_vec()),
        data_type::DOUBLE => floats(&|x| x.to_le_bytes().to_vec()),
        data_type::FLOAT16 if same(ElementType::F16) => Ok(t.bytes().to_vec()),
        data_type::FLOAT16 => floats(&|x| f16::from_f64(x).to_le_bytes().to_vec()),
        ONNX_BFLOAT16 if same(ElementType::BF16) => Ok(t.bytes().to_vec()),
        ONNX_BFLOAT16 => floats(&|x| bf16::from_f64(x).to_le_bytes().to_vec()),
        data_type::BOOL if same(ElementType::Bool) => {
            Ok(t.bytes().iter().map(|&b| u8::from(b != 0)).collect())
        }
        data_type::INT8
        | data_type::UINT8
        | data_type::INT16
        | data_type::UINT16
        | data_type::INT32
        | data_type::UINT32
        | data_type::INT64
        | data_type::UINT64 => {
            if !from.is_integer() {
                return Err(cannot(if from.is_float() {
                    "a float tensor would lose its fractions"
                } else {
                    "it is not an integer type"
                }));
            }
            let v = t.to_i64().map_err(|e| e.to_string())?;
            let (lo, hi, width): (i128, i128, usize) = match to {
                data_type::INT8 => (i8::MIN.into(), i8::MAX.into(), 1),
                data_type::UINT8 => (0, u8::MAX.into(), 1),
                data_type::INT16 => (i16::MIN.into(), i16::MAX.into(), 2),
                data_type::UINT16 => (0, u16::MAX.into(), 2),
                data_type::INT32 => (i32::MIN.into(), i32::MAX.into(), 4),
                data_type::UINT32 => (0, u32::MAX.into(), 4),
                data_type::INT64 => (i64::MIN.into(), i64::MAX.into(), 8),
                _ => (0, i64::MAX.into(), 8),
            };
            let mut out = Vec::with_capacity(v.len() * width);
            for x in v {
                let x = i128::from(x);
                if x < lo || x > hi {
                    return Err(cannot(&format!("the value {x} is out of its range")));
                }
                out.extend_from_slice(&x.to_le_bytes()[..width]);
            }
            Ok(out)
        }
        _ => Err(cannot(
            "Ember converts to float, integer and bool initializers",
        )),
    }
}

/// True for an initializer the checkpoint must provide: a float with more than one element.
fn must_bind(t: &TensorProto, shape: &[usize]) -> bool {
    matches!(
        t.data_type,
        data_type::FLOAT | data_type::DOUBLE | data_type::FLOAT16 | ONNX_BFLOAT16
    ) && shape.iter().product::<usize>() > 1
}

/// The error listing every one of `problems`, one a line, after `prefix`.
fn problems_error(prefix: &str, problems: &[String]) -> ConvertError {
    ConvertError::bind(format!(
        "{prefix}{} problem{} (no file written):\n  - {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("\n  - ")
    ))
}

/// Shows at most `n` names, then how many more.
fn listed(names: &[String], n: usize) -> String {
    let mut s = names
        .iter()
        .take(n)
        .map(|x| format!("\"{x}\""))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > n {
        s.push_str(&format!(" and {} more", names.len() - n));
    }
    s
}

fn bind_initializers(
    inits: &mut [TensorProto],
    ckpt: &Checkpoint<'_>,
    opts: &BindOptions,
    report: &mut BindReport,
) -> Result<(), ConvertError> {
    let index = names::Index::new(ckpt.names(), &opts.renames);
    let pool: Vec<&str> = ckpt.names().filter(|n| !index.is_dropped(n)).collect();
    let mut problems: Vec<String> = Vec::new();
    let mut used: BTreeSet<&str> = BTreeSet::new();
    let mut missing = 0usize;
    for init in inits.iter_mut() {
        let shape = shape_of(init)?;
        let found = match index.find(&init.name) {
            Ok(f) => f,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let Some((name, how)) = found else {
            if must_bind(init, &shape) {
                missing += 1;
                let hint = if missing <= 20 {
                    match names::closest(&init.name, &pool).as_slice() {
                        [] => String::new(),
                        near => format!(" (closest names there: {})", names::quoted(near)),
                    }
                } else {
                    String::new()
                };
                problems.push(format!(
                    "initializer \"{}\" {} {} has no tensor in the checkpoint{hint}",
                    init.name,
                    dims(&shape),
                    onnx_name(init.data_type)
                ));
            } else {
                report.kept.push(init.name.clone());
            }
            continue;
        };
        used.insert(name);
        // The index is built from the checkpoint's own names, so this lookup finds it.
        let Some(t) = ckpt.get(name) else {
            return Err(ConvertError::internal(format!(
                "binding: checkpoint tensor \"{name}\" is indexed but missing"
            )));
        };
        let head = format!(
            "tensor \"{name}\" {} {} for initializer \"{}\" {} {}",
            dims(t.shape()),
            t.dtype(),
            init.name,
            dims(&shape),
            onnx_name(init.data_type)
        );
        if t.shape() != shape.as_slice() {
            let (have, want) = (t.numel(), shape.iter().product::<usize>());
            if have != want {
                problems.push(format!("{head}: {have} elements where {want} are needed"));
                continue;
            }
            if squeezed(t.shape()) != squeezed(&shape) {
                let transposed = t.shape().len() == 2
                    && shape.len() == 2
                    && t.shape()[0] == shape[1]
                    && t.shape()[1] == shape[0];
                problems.push(format!(
                    "{head}: the same element count in another shape{}",
                    if transposed {
                        " (transposed: a PyTorch Linear weight is [out, in], a MatMul initializer \
                         [in, out]; Ember does not transpose weights while binding: export the \
                         graph with Gemm(transB=1), or convert the checkpoint)"
                    } else {
                        ""
                    }
                ));
                continue;
            }
        }
        match encode(t, init.data_type) {
            Ok(raw) => {
                report.bound.push(Binding {
                    initializer: init.name.clone(),
                    shape: shape.clone(),
                    onnx_type: onnx_name(init.data_type),
                    tensor: name.to_string(),
                    tensor_shape: t.shape().to_vec(),
                    dtype: t.dtype(),
                    how,
                });
                *init = TensorProto {
                    name: init.name.clone(),
                    dims: init.dims.clone(),
                    data_type: init.data_type,
                    raw_data: raw,
                    doc_string: init.doc_string.clone(),
                    ..TensorProto::default()
                };
            }
            Err(why) => problems.push(format!("{head}: {why}")),
        }
    }
    report.dropped = index.dropped.iter().map(|s| s.to_string()).collect();
    report.unused = pool
        .iter()
        .filter(|n| !used.contains(*n))
        .map(|s| s.to_string())
        .collect();
    if opts.strict && !report.unused.is_empty() {
        problems.push(format!(
            "--strict: {} checkpoint tensor{} bind to no initializer: {} (drop them with --rename \
             're:^NAME$=')",
            report.unused.len(),
            if report.unused.len() == 1 { "" } else { "s" },
            listed(&report.unused, 50)
        ));
    }
    if !problems.is_empty() {
        return Err(problems_error("", &problems));
    }
    if !report.unused.is_empty() {
        report.notices.push(format!(
            "{} checkpoint tensor{} bound to no initializer: {}",
            report.unused.len(),
            if report.unused.len() == 1 { "" } else { "s" },
            listed(&report.unused, 50)
        ));
    }
    if let Some(reshaped) = report.reshaped() {
        report
            .notices
            .push(format!("bound up to size-1 dims: {reshaped}"));
    }
    Ok(())
}

/// The initializer a LoRA module's weight (`<module>.weight`) is: named so in the graph, or bound
/// from a checkpoint tensor named so.
fn lora_target(
    inits: &[TensorProto],
    weight: &str,
    report: &BindReport,
    opts: &BindOptions,
) -> Result<Option<usize>, String> {
    let names: Vec<&str> = inits.iter().map(|t| t.name.as_str()).collect();
    let index = names::Index::new(std::iter::once(weight), &opts.renames);
    // The best match wins: bound from a tensor of that name, then exact, prefix, rename.
    let mut hits: Vec<(u8, usize)> = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let via_ckpt = report.bound.iter().any(|b| {
            b.initializer == *n && names::strip_wrappers(&b.tensor) == names::strip_wrappers(weight)
        });
        let rank = if via_ckpt {
            Some(0)
        } else {
            match index.find(n).ok().flatten() {
                Some((_, Match::Exact)) => Some(1),
                Some((_, Match::Prefix)) => Some(2),
                Some((_, Match::Rename)) => Some(3),
                None => None,
            }
        };
        if let Some(r) = rank {
            hits.push((r, i));
        }
    }
    let Some(best) = hits.iter().map(|&(r, _)| r).min() else {
        return Ok(None);
    };
    let best: Vec<usize> = hits
        .iter()
        .filter(|&&(r, _)| r == best)
        .map(|&(_, i)| i)
        .collect();
    match best.as_slice() {
        [one] => Ok(Some(*one)),
        many => Err(format!(
            "\"{weight}\" fits several initializers ({})",
            names::quoted(&many.iter().map(|&i| names[i]).collect::<Vec<_>>())
        )),
    }
}

/// How `name` is used: (consumer description, stored as [in, out]) from its first consuming node,
/// or `None` when no node tells.
fn orientation(nodes: &[NodeProto], name: &str) -> Option<(String, bool)> {
    for n in nodes {
        let Some(slot) = n.input.iter().position(|i| i == name) else {
            continue;
        };
        let what = format!("{} ({})", n.name, n.op_type);
        let trans_b = n.attr_i("transB").unwrap_or(0);
        return match (n.op_type.as_str(), slot) {
            ("Gemm", 1) => Some((what, trans_b == 0)),
            ("MatMul", 1) => Some((what, true)),
            ("Conv", 1) => Some((what, false)),
            _ => None,
        };
    }
    None
}

fn lora_merge(
    graph: &mut crate::onnx::proto::GraphProto,
    lora: &Lora<'_>,
    opts: &BindOptions,
    report: &mut BindReport,
) -> Result<(), ConvertError> {
    let mut problems = Vec::new();
    let mut merged: HashMap<usize, String> = HashMap::new();
    for m in &lora.modules {
        let weight = format!("{}.weight", m.module);
        let i = match lora_target(&graph.initializer, &weight, report, opts) {
            Ok(Some(i)) => i,
            Ok(None) => {
                let pool: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
                let near = names::closest(&weight, &pool);
                problems.push(format!(
                    "the adapter adapts module \"{}\", but the model has no initializer \"{weight}\" \
                     (nor one bound from a tensor of that name){}",
                    m.module,
                    if near.is_empty() {
                        String::new()
                    } else {
                        format!("; closest: {}", names::quoted(&near))
                    }
                ));
                continue;
            }
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        if let Some(prev) = merged.insert(i, m.module.clone()) {
            problems.push(format!(
                "modules \"{prev}\" and \"{}\" both adapt initializer \"{}\"",
                m.module, graph.initializer[i].name
            ));
            continue;
        }
        match merge_one(&graph.node, &mut graph.initializer[i], m) {
            Ok(done) => report.lora.push(done),
            Err(e) => problems.push(e),
        }
    }
    if !problems.is_empty() {
        return Err(problems_error("LoRA: ", &problems));
    }
    Ok(())
}

/// Adds `m`'s update to the initializer `init`.
fn merge_one(
    nodes: &[NodeProto],
    init: &mut TensorProto,
    m: &lora::LoraModule<'_>,
) -> Result<LoraMerge, String> {
    let at = |why: String| format!("LoRA module \"{}\" on \"{}\": {why}", m.module, init.name);
    let shape = shape_of(init).map_err(|e| at(e.to_string()))?;
    let (delta, out, k) = m.delta().map_err(|e| at(e.to_string()))?;
    let (what, transposed) = match orientation(nodes, &init.name) {
        Some(o) => o,
        None if shape.first() == Some(&out) && out * k == shape.iter().product::<usize>() => {
            ("its shape".to_string(), false)
        }
        None => {
            return Err(at(format!(
                "no Gemm, MatMul or Conv node uses it as a weight, and its shape {} is not \
                 [{out}, {k}...]",
                dims(&shape)
            )))
        }
    };
    let fits = if transposed {
        shape == [k, out]
    } else {
        shape.first() == Some(&out) && shape.iter().skip(1).product::<usize>() == k
    };
    if !fits {
        return Err(at(format!(
            "B @ A is [{out}, {k}], which does not fit the weight {} as {what} uses it{}",
            dims(&shape),
            if transposed {
                " ([in, out])"
            } else {
                " ([out, in, ...])"
            }
        )));
    }
    let (_, data) =
        crate::onnx::tensor::read_tensor(init, &init.name).map_err(|e| at(e.to_string()))?;
    let crate::ir::ConstData::F32(w) = data else {
        return Err(at("the weight is not a float tensor".into()));
    };
    let updated: Vec<f64> = w
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let d = if transposed {
                // W is [k, out]: element (row = i / out, col = i % out) takes delta[col][row].
                delta[(i % out) * k + i / out]
            } else {
                delta[i]
            };
            f64::from(x) + d
        })
        .collect();
    let t = Tensor::owned(
        ElementType::F64,
        shape.clone(),
        updated.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
    .map_err(|e| at(e.to_string()))?;
    init.raw_data = encode(&t, init.data_type).map_err(at)?;
    init.float_data.clear();
    init.double_data.clear();
    init.int32_data.clear();
    Ok(LoraMerge {
        module: m.module.clone(),
        initializer: init.name.clone(),
        rank: m.rank,
        factor: m.factor,
        transposed,
        consumer: what,
    })
}
