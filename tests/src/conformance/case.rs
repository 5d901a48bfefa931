//! One node-test case: read `model.onnx` and `test_data_set_0/{input,output}_*.pb`, fold the
//! non-float inputs into the model as initializers, convert, run, and compare.
//!
//! Inputs of every type Ember has (float32, float64, the integer types, bool) are fed at run time,
//! their shapes fixed from the test data. When that conversion fails and the case has integer or bool
//! inputs, it is retried with those folded into the model as initializers, so the converter sees them
//! as the constants they are in a deployed model (shapes, axes, indices; tract's harness does the same
//! with input facts). Float16, bfloat16, float8, 4-bit and string tensors are reported as unsupported.
//! Float outputs are compared with the case's tolerance, integer and bool outputs exactly.
//!
//! Many node tests feed weights as graph inputs (Conv's `W`, Clip's `min`, Pad's `value`), which
//! Ember wants as constants. A case whose config names its runtime inputs (`input=x`) folds every other
//! float input too; an integer input it names stays at run time (`input=indices`: OneHot's `depth`,
//! a float, is folded while its integer indices are fed). A case without that flag first runs with every float input at run time; if the
//! conversion fails (other than on an unknown op) and there are several float inputs, it is retried
//! with only the first one at run time; a pass that way reports the flag it needed (`--regen` writes
//! it into the manifest), and a failure reports the retry's outcome, marked `(with input=x)`.

use std::path::Path;

use ember_convert::onnx::proto::{data_type, ModelProto, NodeProto, TensorProto, TypeValue};
use ember_convert::onnx::tensor::dtype_of;
use ember_convert::{ConvertError, ConvertOptions};
use ember_core::DType;
use prost::Message;

use super::compare::{compare, Tolerance};
use super::{CaseConfig, Outcome};

/// The most arena bytes a case may ask for; a larger plan is reported as an error instead of
/// aborting the whole run on a failed allocation.
const MAX_ARENA_BYTES: usize = 1 << 30;

/// What running one case found, besides its outcome: the op types of its nodes (for the op table).
pub struct CaseRun {
    /// Op type of every node of the model, in order (empty if the model could not be read).
    pub node_ops: Vec<String>,
    /// The verdict.
    pub outcome: Outcome,
    /// The manifest flag the case needed to pass (`input=x`), when the retry found it.
    pub needed_flag: Option<String>,
}

/// How far an attempt got, for the retry decision.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Stopped before the converter was called (test data, dtypes).
    Prepare,
    /// The converter returned an error.
    Convert,
    /// Converted; the outcome is the runtime's or the comparison's.
    Ran,
}

/// What an attempt found among the graph's runtime inputs.
#[derive(Default)]
struct SeenInputs {
    /// Names of the float32 inputs.
    floats: Vec<String>,
    /// Number of integer and bool inputs.
    ints: usize,
}

/// One graph output of a run: its dims, dtype and little-endian bytes.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub dims: Vec<usize>,
    pub dtype: DType,
    pub bytes: Vec<u8>,
}

/// What runs a converted blob: the graph inputs' bytes in the blob's order in, every graph output
/// out, or what went wrong. [`cpu_reference`] is the CPU's; a target's tests pass their own, so that
/// the same cases and tolerances measure it (`ember-gpu`'s Vulkan conformance test).
pub type Runner<'r> = &'r (dyn Fn(&[u8], &[&[u8]]) -> Result<Vec<RunOutput>, String> + Sync);

/// Runs `blob` with `ember_core::Session` over the reference kernels.
pub fn cpu_reference(blob: &[u8], inputs: &[&[u8]]) -> Result<Vec<RunOutput>, String> {
    let blob = ember_core::AlignedBuf::from_bytes(blob);
    let m = ember_core::Model::parse(blob.as_bytes()).map_err(|e| format!("parse: {e}"))?;
    if m.arena_bytes() > MAX_ARENA_BYTES {
        return Err(format!(
            "the plan asks for a {} byte arena",
            m.arena_bytes()
        ));
    }
    let mut arena = ember_core::AlignedBuf::zeroed(m.arena_bytes());
    let mut s =
        ember_core::Session::new(&m, arena.as_mut_bytes()).map_err(|e| format!("session: {e}"))?;
    for (i, values) in inputs.iter().enumerate() {
        let mut t = s.input(i).map_err(|e| format!("input {i}: {e}"))?;
        let dst = t.bytes_mut();
        if dst.len() != values.len() {
            return Err(format!(
                "input {i}: the blob holds {} bytes, the test data {}",
                dst.len(),
                values.len()
            ));
        }
        dst.copy_from_slice(values);
    }
    s.run().map_err(|e| format!("run: {e}"))?;
    (0..m.outputs().len())
        .map(|k| {
            let out = s.output(k).map_err(|e| format!("output {k}: {e}"))?;
            Ok(RunOutput {
                dims: out.dims().iter().map(|&d| d as usize).collect(),
                dtype: out.dtype(),
                bytes: out.bytes().to_vec(),
            })
        })
        .collect()
}

/// The test data of one case.
struct TestData {
    inputs: Vec<TensorProto>,
    outputs: Vec<TensorProto>,
}

/// Runs the case in folder `dir` with `cfg`. Never panics on its own account; the converter or the
/// runtime may, which the caller catches.
pub fn run_case(dir: &Path, cfg: &CaseConfig, runner: Runner<'_>) -> CaseRun {
    let mut node_ops = Vec::new();
    let mut stage = Stage::Prepare;
    let mut seen = SeenInputs::default();
    let first = attempt(
        dir,
        runner,
        cfg.tol,
        cfg.inputs.as_deref(),
        &mut node_ops,
        &mut stage,
        &mut seen,
        false,
    );
    let floats = seen.floats;
    let mut first = first.unwrap_or_else(|o| o);
    // Integer and bool inputs run at run time first; when the converter needs them as constants
    // (shapes, axes, indices), they are folded into the model, as a deployed model has them.
    let fold_ints = seen.ints > 0 && stage == Stage::Convert;
    if fold_ints {
        let (mut ops2, mut seen2) = (Vec::new(), SeenInputs::default());
        stage = Stage::Prepare;
        first = attempt(
            dir,
            runner,
            cfg.tol,
            cfg.inputs.as_deref(),
            &mut ops2,
            &mut stage,
            &mut seen2,
            true,
        )
        .unwrap_or_else(|o| o);
    }
    // An op the converter does not know stays unknown with constant weights: no retry.
    let unknown_op = matches!(&first, Outcome::Unsupported(m) if m.starts_with("op "));
    if cfg.inputs.is_some() || stage != Stage::Convert || floats.len() < 2 || unknown_op {
        return CaseRun {
            node_ops,
            outcome: first,
            needed_flag: None,
        };
    }
    let only = vec![floats[0].clone()];
    let flag = format!("input={}", only[0]);
    let (mut ops2, mut stage2) = (Vec::new(), Stage::Prepare);
    let mut seen2 = SeenInputs::default();
    let retry = attempt(
        dir,
        runner,
        cfg.tol,
        Some(&only),
        &mut ops2,
        &mut stage2,
        &mut seen2,
        fold_ints,
    )
    .unwrap_or_else(|o| o);
    let outcome = match retry {
        Outcome::Pass => {
            return CaseRun {
                node_ops,
                outcome: Outcome::Pass,
                needed_flag: Some(flag),
            }
        }
        Outcome::Fail(m) => Outcome::Fail(format!("(with {flag}) {m}")),
        Outcome::Unsupported(m) => Outcome::Unsupported(format!("(with {flag}) {m}")),
        Outcome::Error(m) => Outcome::Error(format!("(with {flag}) {m}")),
        Outcome::Panic(m) => Outcome::Panic(m),
    };
    CaseRun {
        node_ops,
        outcome,
        needed_flag: None,
    }
}

/// One conversion and run. `runtime_inputs`: the float inputs to keep at run time (`None`: all).
/// `floats` receives the names of the float inputs; `stage` how far it got.
#[allow(clippy::too_many_arguments)]
fn attempt(
    dir: &Path,
    runner: Runner<'_>,
    tol: Tolerance,
    runtime_inputs: Option<&[String]>,
    node_ops: &mut Vec<String>,
    stage: &mut Stage,
    seen: &mut SeenInputs,
    fold_ints: bool,
) -> Result<Outcome, Outcome> {
    let SeenInputs {
        floats,
        ints: int_inputs,
    } = seen;
    let bytes = std::fs::read(dir.join("model.onnx"))
        .map_err(|e| Outcome::Error(format!("cannot read model.onnx: {e}")))?;
    let mut model = ModelProto::decode(&bytes[..])
        .map_err(|e| Outcome::Error(format!("model.onnx does not decode: {e}")))?;
    let graph = model
        .graph
        .as_mut()
        .ok_or_else(|| Outcome::Error("model.onnx holds no graph".into()))?;
    node_ops.extend(graph.node.iter().map(|n: &NodeProto| n.op_type.clone()));
    for (what, vi) in graph
        .input
        .iter()
        .map(|v| ("input", v))
        .chain(graph.output.iter().map(|v| ("output", v)))
    {
        if !matches!(
            vi.r#type.as_ref().and_then(|t| t.value.as_ref()),
            Some(TypeValue::TensorType(_))
        ) {
            return Err(Outcome::Unsupported(format!(
                "dtype: {what} \"{}\" is not a tensor (sequence, optional or map)",
                vi.name
            )));
        }
    }
    let data = read_test_data(&dir.join("test_data_set_0"))?;

    // Graph inputs that are not initializers, bound to the test inputs by position.
    let initialized: std::collections::HashSet<&str> =
        graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let runtime: Vec<String> = graph
        .input
        .iter()
        .map(|vi| vi.name.clone())
        .filter(|n| !initialized.contains(n.as_str()))
        .collect();
    if runtime.len() != data.inputs.len() {
        return Err(Outcome::Error(format!(
            "the graph has {} inputs but the test data {}",
            runtime.len(),
            data.inputs.len()
        )));
    }
    if graph.output.len() != data.outputs.len() {
        return Err(Outcome::Error(format!(
            "the graph has {} outputs but the test data {}",
            graph.output.len(),
            data.outputs.len()
        )));
    }
    for (vi, t) in graph.output.iter().zip(&data.outputs) {
        if dtype_of(t.data_type).is_none() {
            return Err(Outcome::Unsupported(format!(
                "dtype: output \"{}\" is {}",
                vi.name,
                data_type::name(t.data_type)
            )));
        }
    }

    let mut feeds: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    let mut folded: Vec<TensorProto> = Vec::new();
    let mut named_ints: Vec<String> = Vec::new();
    for (name, t) in runtime.iter().zip(&data.inputs) {
        match dtype_of(t.data_type) {
            Some(DType::F32) if runtime_inputs.is_some_and(|r| !r.contains(name)) => {
                floats.push(name.clone());
                let mut c = t.clone();
                c.name = name.clone();
                folded.push(c);
            }
            Some(DType::F32) | Some(DType::F64) | Some(DType::F16) => {
                if t.data_type == data_type::FLOAT {
                    floats.push(name.clone());
                }
                let dims = dims_of(t).map_err(Outcome::Error)?;
                let bytes = le_bytes(t).map_err(Outcome::Error)?;
                feeds.push((name.clone(), dims, bytes));
            }
            // An empty integer input (no axes, say) can only be a constant; one the flag names
            // (`input=indices`) stays at run time.
            Some(_)
                if runtime_inputs.is_some_and(|r| r.contains(name))
                    || !fold_ints && !dims_of(t).map_err(Outcome::Error)?.contains(&0) =>
            {
                let dims = dims_of(t).map_err(Outcome::Error)?;
                if runtime_inputs.is_some_and(|r| r.contains(name)) {
                    named_ints.push(name.clone());
                }
                *int_inputs += 1;
                let bytes = le_bytes(t).map_err(Outcome::Error)?;
                feeds.push((name.clone(), dims, bytes));
            }
            Some(_) => {
                *int_inputs += 1;
                let mut c = t.clone();
                c.name = name.clone();
                folded.push(c);
            }
            _ => {
                return Err(Outcome::Unsupported(format!(
                    "dtype: input \"{name}\" is {}",
                    data_type::name(t.data_type)
                )))
            }
        }
    }
    if let Some(r) = runtime_inputs {
        if let Some(n) = r
            .iter()
            .find(|n| !floats.contains(n) && !named_ints.contains(n))
        {
            return Err(Outcome::Error(format!(
                "flag input={}: the case has no input \"{n}\" (its float inputs are {floats:?})",
                r.join(",")
            )));
        }
    }
    let folded_names: Vec<String> = folded.iter().map(|t| t.name.clone()).collect();
    graph.input.retain(|vi| !folded_names.contains(&vi.name));
    graph.initializer.extend(folded);
    let output_names: Vec<String> = graph.output.iter().map(|vi| vi.name.clone()).collect();
    // NonZero and NonMaxSuppression need the most values they output (`--max-count`): the case
    // gives the count its expected output holds, along the count's axis.
    let mut max_counts = Vec::new();
    for node in &graph.node {
        let axis = match node.op_type.as_str() {
            "NonZero" => 1,
            "NonMaxSuppression" => 0,
            _ => continue,
        };
        let Some(name) = node.output.first() else {
            continue;
        };
        if let Some(j) = output_names.iter().position(|n| n == name) {
            let dims = dims_of(&data.outputs[j]).map_err(Outcome::Error)?;
            if let Some(&n) = dims.get(axis) {
                max_counts.push((name.clone(), n));
            }
        }
    }
    // A Loop whose trip count is computed at run time needs its most iterations (`--max-trip`): the
    // case gives the count its stacked output holds (a Loop's outputs after its carried values).
    let mut max_trips = Vec::new();
    for node in graph.node.iter().filter(|n| n.op_type == "Loop") {
        let carried = node.input.len().saturating_sub(2);
        for name in node.output.iter().skip(carried) {
            if let Some(j) = output_names.iter().position(|n| n == name) {
                let dims = dims_of(&data.outputs[j]).map_err(Outcome::Error)?;
                if let Some(&n) = dims.first() {
                    max_trips.push((name.clone(), n));
                }
            }
        }
    }
    let edited = model.encode_to_vec();

    let opts = ConvertOptions {
        shapes: feeds
            .iter()
            .map(|(n, d, _)| (n.clone(), d.clone()))
            .collect(),
        keep_names: true,
        max_counts,
        max_trips,
        ..Default::default()
    };
    *stage = Stage::Convert;
    let converted = ember_convert::convert(&edited, &opts).map_err(classify)?;
    *stage = Stage::Ran;

    if converted.report.inputs.len() != feeds.len() {
        return Err(Outcome::Error(format!(
            "the blob has {} inputs, the case feeds {}",
            converted.report.inputs.len(),
            feeds.len()
        )));
    }
    let mut inputs: Vec<&[u8]> = Vec::with_capacity(feeds.len());
    for (name, _) in &converted.report.inputs {
        let (_, _, values) = feeds
            .iter()
            .find(|(n, _, _)| n == name)
            .ok_or_else(|| Outcome::Error(format!("blob input \"{name}\" is not a test input")))?;
        inputs.push(values);
    }
    let outputs = runner(&converted.blob, &inputs).map_err(Outcome::Error)?;

    if converted.report.outputs.len() != output_names.len() || outputs.len() != output_names.len() {
        return Err(Outcome::Error(format!(
            "the blob has {} outputs, the graph {}",
            converted.report.outputs.len(),
            output_names.len()
        )));
    }
    let mut worst: Option<String> = None;
    for (k, (name, _)) in converted.report.outputs.iter().enumerate() {
        let j = output_names.iter().position(|n| n == name).ok_or_else(|| {
            Outcome::Error(format!("blob output \"{name}\" is not a graph output"))
        })?;
        let expected = &data.outputs[j];
        let want_dims = dims_of(expected).map_err(Outcome::Error)?;
        let out = &outputs[k];
        let got_dims = &out.dims;
        if *got_dims != want_dims {
            return Ok(Outcome::Fail(format!(
                "output \"{name}\": shape {got_dims:?}, expected {want_dims:?}"
            )));
        }
        let want_type = dtype_of(expected.data_type);
        if want_type != Some(out.dtype) {
            return Ok(Outcome::Fail(format!(
                "output \"{name}\": type {}, expected {}",
                out.dtype.name(),
                data_type::name(expected.data_type)
            )));
        }
        let want = le_bytes(expected).map_err(Outcome::Error)?;
        let verdict = match out.dtype {
            DType::F32 => compare(&f32s(&out.bytes), &f32s(&want), tol),
            DType::F64 => compare(&f64s_as_f32(&out.bytes), &f64s_as_f32(&want), tol),
            DType::F16 => compare(&f16s_as_f32(&out.bytes), &f16s_as_f32(&want), tol),
            _ => compare_exact(&out.bytes, &want, out.dtype.size()),
        };
        if let Err(d) = verdict {
            worst.get_or_insert(format!("output \"{name}\": {d}"));
        }
    }
    Ok(match worst {
        Some(w) => Outcome::Fail(w),
        None => Outcome::Pass,
    })
}

/// Reads `input_<i>.pb` and `output_<i>.pb`, i = 0, 1, ... until one is missing.
fn read_test_data(dir: &Path) -> Result<TestData, Outcome> {
    let read = |prefix: &str| -> Result<Vec<TensorProto>, Outcome> {
        let mut v = Vec::new();
        loop {
            let p = dir.join(format!("{prefix}_{}.pb", v.len()));
            if !p.exists() {
                return Ok(v);
            }
            let bytes = std::fs::read(&p)
                .map_err(|e| Outcome::Error(format!("cannot read {}: {e}", p.display())))?;
            // Sequences, optionals and maps are stored as other messages; they decode as a tensor
            // with no data, which the dtype checks then reject.
            let t = TensorProto::decode(&bytes[..]).map_err(|e| {
                Outcome::Unsupported(format!("dtype: {prefix}_{} is not a tensor ({e})", v.len()))
            })?;
            v.push(t);
        }
    };
    Ok(TestData {
        inputs: read("input")?,
        outputs: read("output")?,
    })
}

fn dims_of(t: &TensorProto) -> Result<Vec<usize>, String> {
    let dims: Vec<usize> = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("tensor \"{}\" has dim {d}", t.name)))
        .collect::<Result<_, _>>()?;
    dims.iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("tensor \"{}\": dims {dims:?} overflow", t.name))?;
    Ok(dims)
}

/// The elements of a tensor proto as little-endian bytes of its own type (raw data as stored, or
/// the typed field converted).
fn le_bytes(t: &TensorProto) -> Result<Vec<u8>, String> {
    let dtype = dtype_of(t.data_type).ok_or_else(|| {
        format!(
            "tensor \"{}\" has type {}",
            t.name,
            data_type::name(t.data_type)
        )
    })?;
    let n: usize = dims_of(t)?.iter().product();
    let size = dtype.size();
    if !t.raw_data.is_empty() {
        if t.raw_data.len() != n * size {
            return Err(format!(
                "tensor \"{}\": {n} elements need {} bytes, the data holds {}",
                t.name,
                n * size,
                t.raw_data.len()
            ));
        }
        return Ok(t.raw_data.clone());
    }
    let mut out = Vec::with_capacity(n * size);
    match dtype {
        DType::F32 => t
            .float_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::F64 => t
            .double_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::I64 => t
            .int64_data
            .iter()
            .for_each(|v| out.extend(v.to_le_bytes())),
        DType::U32 | DType::U64 => t
            .uint64_data
            .iter()
            .for_each(|v| out.extend(&v.to_le_bytes()[..size])),
        // INT32, INT16, INT8, UINT16, UINT8 and BOOL live in int32_data, one value each.
        _ => t
            .int32_data
            .iter()
            .for_each(|v| out.extend(&v.to_le_bytes()[..size])),
    }
    if out.len() != n * size {
        return Err(format!(
            "tensor \"{}\": {n} elements need {} bytes, the data holds {}",
            t.name,
            n * size,
            out.len()
        ));
    }
    Ok(out)
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// f64 elements, narrowed to f32 for the tolerance check (the node tests' tolerances are f32-sized).
fn f64s_as_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(8)
        .map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            f64::from_le_bytes(a) as f32
        })
        .collect()
}

/// float16 elements, widened to f32 (exactly).
fn f16s_as_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(2)
        .map(|c| ember_core::half::f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect()
}

/// Integer and bool outputs must match exactly (bools compared as true/false).
fn compare_exact(got: &[u8], want: &[u8], size: usize) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} bytes, expected {}", got.len(), want.len()));
    }
    let as_i128 = |c: &[u8]| {
        let mut a = [0u8; 16];
        a[..c.len()].copy_from_slice(c);
        i128::from_le_bytes(a)
    };
    let bad: Vec<usize> = got
        .chunks_exact(size)
        .zip(want.chunks_exact(size))
        .enumerate()
        .filter(|(_, (g, w))| g != w)
        .map(|(i, _)| i)
        .collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{} of {} elements differ; first at {i}: got {}, expected {}",
            bad.len(),
            got.len() / size,
            as_i128(&got[i * size..][..size]),
            as_i128(&want[i * size..][..size])
        )),
    }
}

/// Sorts a conversion error into "unsupported" (the converter declined an op, attribute or type)
/// and "error" (anything else).
fn classify(e: ConvertError) -> Outcome {
    let msg = e.to_string();
    match &e {
        ConvertError::UnsupportedOp { op, domain, .. } => {
            let d = if domain.is_empty() {
                String::new()
            } else {
                format!("{domain}.")
            };
            Outcome::Unsupported(format!("op {d}{op}"))
        }
        ConvertError::Model { reason } if reason.contains("imports no opset of the default") => {
            Outcome::Unsupported(msg)
        }
        ConvertError::Node { reason, .. }
        | ConvertError::Input { reason, .. }
        | ConvertError::Output { reason, .. }
        | ConvertError::Tensor { reason, .. }
            if declines(reason) =>
        {
            Outcome::Unsupported(msg)
        }
        _ => Outcome::Error(msg),
    }
}

/// True for the converter's ways of saying "I do not support this" (attribute, mode, rank, element
/// type).
fn declines(reason: &str) -> bool {
    const PHRASES: [&str; 8] = [
        "not supported",
        "unsupported",
        "does not support",
        "element type",
        "graph inputs are float",
        "float only",
        "only supports",
        "is not implemented",
    ];
    let r = reason.to_ascii_lowercase();
    PHRASES.iter().any(|p| r.contains(p)) || (r.contains("only") && r.contains("supported"))
}
