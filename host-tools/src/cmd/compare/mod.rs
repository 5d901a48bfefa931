//! `ember compare`: where a converted model's numbers part from onnxruntime's, layer by layer.
//!
//! onnxruntime runs the ONNX model with every node output made a graph output (`onnx_values.py`,
//! through the Python that [`onnx_python`] finds); Ember runs the blob (or converts the ONNX model
//! itself, keeping every value as a tensor of its own: `ConvertOptions::observe`) and hands over every
//! op's output as it is written (`Session::run_observed`). Each Ember tensor is matched to the ONNX
//! value it holds by name (the converter keeps ONNX names, and derives the names of what it adds:
//! `X_quantized`, `X_float`, `X.int8` hold X), read in ONNX's element order ([`layout`]), dequantized
//! when int8, and compared.

mod layout;
mod plot;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{anyhow, bail, Context, Result};
use ember_core::{DType, Model};

use super::common::{bind_names, host_arena, host_cpu, onnx_python, read_blob, shape_str};
use crate::npy;

/// The script that runs onnxruntime with every intermediate value exposed.
const ONNX_VALUES_PY: &str = include_str!("onnx_values.py");

#[derive(clap::Args)]
pub struct Args {
    /// The ONNX model, run by onnxruntime as the reference.
    pub onnx: PathBuf,
    /// The .ember blob to check (converted from that model, in float or int8). Without it, the ONNX
    /// model is converted here in float32 with every value kept as a tensor of its own.
    pub ember: Option<PathBuf>,
    /// An input as x.npy (in graph-input order) or NAME=x.npy (repeatable), one per graph input.
    #[arg(long = "input", value_name = "[NAME=]FILE")]
    pub inputs: Vec<String>,
    /// Draw the error of every layer, in graph order, into an SVG.
    #[arg(long, value_name = "SVG")]
    pub plot: Option<PathBuf>,
    /// A layer is flagged when the cosine similarity of its values to onnxruntime's is below this.
    #[arg(long, default_value_t = 0.99)]
    pub threshold: f64,
    /// An int8 layer is also flagged when its largest error exceeds this many steps of its scale.
    #[arg(long, value_name = "STEPS", default_value_t = 2.0)]
    pub max_steps: f64,
}

/// One ONNX node, as the script lists it.
struct OnnxNode {
    name: String,
    op: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    /// Computed from initializers alone: folded by the converter, not compared.
    constant: bool,
}

/// One compared value.
pub struct Row {
    /// The ONNX nodes whose result it is (`conv1+relu1` when Ember fused them), and their op types.
    pub layer: String,
    pub op: String,
    /// The ONNX value.
    pub tensor: String,
    pub shape: Vec<usize>,
    /// Ember's element type for it.
    pub dtype: DType,
    pub max_err: f64,
    pub mean_err: f64,
    pub cosine: f64,
    /// The largest error in steps of the tensor's scale (int8 tensors).
    pub steps: Option<f64>,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let onnx = std::fs::read(&args.onnx)
        .with_context(|| format!("cannot read {}", args.onnx.display()))?;
    let input_names = ember_convert::onnx::graph_input_names(&onnx)
        .map_err(|e| anyhow!("{}: {e}", args.onnx.display()))?;
    let bound = bind_names(&input_names, &args.inputs, "input")?;
    if bound.len() != input_names.len() {
        let missing: Vec<&str> = (0..input_names.len())
            .filter(|p| !bound.iter().any(|(q, _)| q == p))
            .map(|p| input_names[p].as_str())
            .collect();
        bail!(
            "no file given for input(s) {}; pass --input NAME=x.npy",
            missing.join(", ")
        );
    }
    let mut inputs: Vec<(String, npy::Typed)> = Vec::new();
    for &(pos, file) in &bound {
        let name = input_names[pos].clone();
        let arr = npy::read_typed(Path::new(file)).with_context(|| format!("input {name:?}"))?;
        inputs.push((name, arr));
    }

    // A given blob is checked before onnxruntime runs.
    let given = match &args.ember {
        Some(path) => {
            let blob = read_blob(path)?;
            let model =
                Model::parse(blob.as_bytes()).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            if (0..model.tensor_count()).all(|i| model.tensor_name(i).is_none()) {
                bail!(
                    "{} has no names table (converted with --strip-names), so none of its tensors \
                     can be matched to the ONNX model's values: convert it without --strip-names",
                    path.display()
                );
            }
            Some(blob)
        }
        None => None,
    };

    let (nodes, reference) = run_onnxruntime(&args.onnx, &bound, &input_names)?;

    let blob = match given {
        Some(blob) => blob,
        None => {
            let opts = ember_convert::ConvertOptions {
                shapes: inputs
                    .iter()
                    .map(|(n, a)| (n.clone(), a.shape.clone()))
                    .collect(),
                keep_names: true,
                observe: nodes
                    .iter()
                    .filter(|n| !n.constant)
                    .flat_map(|n| n.outputs.clone())
                    .collect(),
                ..ember_convert::ConvertOptions::default()
            };
            let converted = ember_convert::convert(&onnx, &opts)
                .map_err(|e| anyhow!("{}: {e}", args.onnx.display()))?;
            ember_core::AlignedBuf::from_bytes(&converted.blob)
        }
    };
    let what = args
        .ember
        .as_ref()
        .unwrap_or(&args.onnx)
        .display()
        .to_string();
    let model = Model::parse(blob.as_bytes()).map_err(|e| anyhow!("{what}: {e}"))?;
    let observed = run_ember(&model, &inputs, &reference, &what)?;

    let rows = compare_rows(&nodes, &reference, &observed);
    if rows.is_empty() {
        bail!(
            "no tensor of {what} holds a value of {} by name (convert with names kept)",
            args.onnx.display()
        );
    }
    let first = rows
        .iter()
        .position(|r| r.cosine < args.threshold || r.steps.is_some_and(|s| s > args.max_steps));
    print_table(&rows, first);
    let compared: HashSet<&str> = rows.iter().map(|r| r.tensor.as_str()).collect();
    let unmatched: Vec<&str> = nodes
        .iter()
        .filter(|n| !n.constant)
        .flat_map(|n| &n.outputs)
        .filter(|o| reference.contains_key(o.as_str()) && !compared.contains(o.as_str()))
        .map(String::as_str)
        .collect();
    if !unmatched.is_empty() {
        println!(
            "{} ONNX value(s) have no tensor of their own in Ember (fused or folded): {}",
            unmatched.len(),
            unmatched.join(", ")
        );
    }
    if let Some(path) = &args.plot {
        plot::write(path, &rows, first)?;
        println!("wrote {}", path.display());
    }
    match first {
        Some(i) => {
            let r = &rows[i];
            let why = match r.steps {
                Some(s) if s > args.max_steps => {
                    format!("{s:.1} steps of its scale > {}", args.max_steps)
                }
                _ => format!("cosine {:.6} < {}", r.cosine, args.threshold),
            };
            println!(
                "first layer over the threshold: {} ({} {}): {why}",
                r.layer, r.op, r.tensor
            );
            Ok(ExitCode::FAILURE)
        }
        None => {
            println!(
                "every layer within the threshold (cosine >= {}, int8 error <= {} steps)",
                args.threshold, args.max_steps
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// An ONNX value computed by onnxruntime, as f64, with its shape and element type.
struct Value {
    shape: Vec<usize>,
    dtype: DType,
    data: Vec<f64>,
}

/// Runs the script; returns the nodes in graph order and every value by name.
fn run_onnxruntime(
    onnx: &Path,
    bound: &[(usize, &str)],
    input_names: &[String],
) -> Result<(Vec<OnnxNode>, HashMap<String, Value>)> {
    let python = onnx_python()?;
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let script = dir.path().join("onnx_values.py");
    std::fs::write(&script, ONNX_VALUES_PY).context("cannot write the onnxruntime script")?;
    let out = dir.path().join("values");
    std::fs::create_dir(&out).context("cannot make a temporary folder")?;
    let mut cmd = Command::new(&python);
    cmd.arg(&script).arg(onnx).arg(&out);
    for &(pos, file) in bound {
        let abs = std::path::absolute(file).unwrap_or_else(|_| PathBuf::from(file));
        cmd.arg(format!("{}={}", input_names[pos], abs.display()));
    }
    let o = cmd
        .output()
        .with_context(|| format!("cannot start {}", python.display()))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let last = err
            .trim()
            .lines()
            .last()
            .unwrap_or("no message")
            .to_string();
        bail!(
            "onnxruntime (through {}) failed on {}: {last}",
            python.display(),
            onnx.display()
        );
    }
    let manifest = out.join("values.json");
    let text =
        std::fs::read_to_string(&manifest).context("the onnxruntime script wrote no list")?;
    let json: serde_json::Value =
        serde_json::from_str(&text).context("the onnxruntime script's list does not parse")?;
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let field = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let nodes = json["nodes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| OnnxNode {
                    name: field(n, "name"),
                    op: field(n, "op"),
                    inputs: strings(&n["inputs"]),
                    outputs: strings(&n["outputs"]),
                    constant: n["constant"].as_bool().unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default();
    let mut values = HashMap::new();
    for v in json["values"].as_array().into_iter().flatten() {
        let (name, file) = (field(v, "name"), field(v, "file"));
        let Ok(t) = npy::read_typed(&out.join(&file)) else {
            continue; // a type Ember has no counterpart of (strings, float16): not compared
        };
        values.insert(
            name,
            Value {
                data: npy::to_f64(t.dtype, &t.bytes),
                dtype: t.dtype,
                shape: t.shape,
            },
        );
    }
    Ok((nodes, values))
}

/// What Ember wrote for one ONNX value, in ONNX's element order, with the scale and zero point of
/// an int8 tensor.
struct Observed {
    data: Vec<f64>,
    dtype: DType,
    quant: Option<(f32, i32)>,
}

/// The ONNX value a blob tensor holds: its own name, or the name the converter derived it from.
fn onnx_name<'a>(name: &'a str, onnx: &HashMap<String, Value>) -> Option<&'a str> {
    const DERIVED: [&str; 4] = [".int8", "_quantized", "_float", "_dequantized"];
    let mut n = name;
    loop {
        if onnx.contains_key(n) {
            return Some(n);
        }
        n = DERIVED.iter().find_map(|s| n.strip_suffix(s))?;
    }
}

/// Runs the blob on `inputs` and keeps, for every ONNX value, the last tensor written that holds it
/// (but an int8 one over the exact float copy a Dequantize makes of it, which has no scale to measure
/// steps in).
fn run_ember(
    model: &Model<'_>,
    inputs: &[(String, npy::Typed)],
    reference: &HashMap<String, Value>,
    what: &str,
) -> Result<HashMap<String, Observed>> {
    let cpu = host_cpu(1)?;
    let mut arena = host_arena(&cpu, model)?;
    let mut session = cpu.session(model, arena.as_mut_bytes())?;
    for (pos, &id) in model.inputs().iter().enumerate() {
        let name = model.tensor_name(id as usize).unwrap_or_default();
        let Some((_, arr)) = inputs.iter().find(|(n, _)| n == name) else {
            bail!("{what} has an input {name:?} that the ONNX model does not have");
        };
        let mut t = session.input(pos)?;
        let want: Vec<usize> = t.dims().iter().map(|&d| d as usize).collect();
        if arr.shape != want {
            bail!(
                "input {name:?}: {what} expects shape {}, the file has shape {} (convert with \
                 --shape {name}=...)",
                shape_str(&want),
                shape_str(&arr.shape)
            );
        }
        if arr.dtype == t.dtype() {
            t.bytes_mut().copy_from_slice(&arr.bytes);
        } else if arr.dtype == DType::F32 {
            let values: Vec<f32> = npy::to_f64(DType::F32, &arr.bytes)
                .into_iter()
                .map(|v| v as f32)
                .collect();
            t.write_f32(&values)
                .map_err(|e| anyhow!("input {name:?}: {e}"))?;
        } else {
            bail!(
                "input {name:?}: {what} takes {}, the file holds {}",
                t.dtype().name(),
                arr.dtype.name()
            );
        }
    }
    let layouts = layout::Layouts::of(model);
    let mut observed: HashMap<String, Observed> = HashMap::new();
    session.run_observed(&mut |i, id, t| {
        let Some(name) = model
            .tensor_name(id as usize)
            .and_then(|n| onnx_name(n, reference))
        else {
            return;
        };
        let dequantize = model
            .op(i)
            .is_some_and(|op| matches!(op.kind, ember_core::OpKind::Dequantize(_)));
        if dequantize && observed.get(name).is_some_and(|o| o.quant.is_some()) {
            return;
        }
        let quant = match (t.dtype(), model.tensor(id as usize).and_then(|r| r.quant)) {
            (DType::I8, Some(q)) => Some((q.scale, q.zero_point)),
            _ => None,
        };
        let data = layouts.to_onnx_order(id, npy::to_f64(t.dtype(), t.bytes()));
        observed.insert(
            name.to_string(),
            Observed {
                data,
                dtype: t.dtype(),
                quant,
            },
        );
    })?;
    Ok(observed)
}

/// One row per ONNX value Ember holds, in the ONNX graph's order. A row's layer is the node that
/// computed the value and the nodes before it whose values Ember does not hold (fused into it).
fn compare_rows(
    nodes: &[OnnxNode],
    reference: &HashMap<String, Value>,
    observed: &HashMap<String, Observed>,
) -> Vec<Row> {
    let producer: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.outputs.iter().map(move |o| (o.as_str(), i)))
        .collect();
    let mut taken = vec![false; nodes.len()];
    let mut rows = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        for out in &node.outputs {
            let (Some(want), Some(got)) = (reference.get(out), observed.get(out)) else {
                continue;
            };
            // The nodes fused into this one: walk back through values Ember does not hold.
            let mut group = vec![i];
            let mut stack = vec![i];
            taken[i] = true;
            while let Some(k) = stack.pop() {
                for input in &nodes[k].inputs {
                    let Some(&p) = producer.get(input.as_str()) else {
                        continue;
                    };
                    let fused = !taken[p]
                        && !nodes[p].constant
                        && nodes[p].outputs.iter().all(|o| !observed.contains_key(o));
                    if fused {
                        taken[p] = true;
                        group.push(p);
                        stack.push(p);
                    }
                }
            }
            group.sort_unstable();
            let names: Vec<&str> = group.iter().map(|&k| nodes[k].name.as_str()).collect();
            let ops: Vec<&str> = group.iter().map(|&k| nodes[k].op.as_str()).collect();
            rows.push(measure(
                names.join("+"),
                ops.join("+"),
                out.clone(),
                want,
                got,
            ));
        }
    }
    rows
}

/// The errors of `got` against `want`. An int8 tensor is dequantized to compare with a float value,
/// and compared as it is with an integer one (a QuantizeLinear's output); either way `steps` is its
/// largest error in steps of its scale.
fn measure(layer: String, op: String, tensor: String, want: &Value, got: &Observed) -> Row {
    let float_reference = matches!(want.dtype, DType::F32 | DType::F64 | DType::F16);
    let dequantized: Vec<f64>;
    let (got_data, step) = match got.quant {
        Some((scale, zero_point)) if float_reference => {
            let (s, z) = (f64::from(scale), f64::from(zero_point));
            dequantized = got.data.iter().map(|&q| s * (q - z)).collect();
            (&dequantized, Some(s))
        }
        Some(_) => (&got.data, Some(1.0)),
        None => (&got.data, None),
    };
    let n = want.data.len().min(got_data.len());
    let (mut max_err, mut sum_err, mut dot, mut ww, mut gg) = (0f64, 0f64, 0f64, 0f64, 0f64);
    for (&w, &g) in want.data.iter().zip(got_data) {
        let e = if w == g { 0.0 } else { (g - w).abs() };
        let e = if e.is_nan() { f64::INFINITY } else { e };
        max_err = max_err.max(e);
        sum_err += e;
        dot += w * g;
        ww += w * w;
        gg += g * g;
    }
    let cosine = if want.data.len() != got_data.len() {
        f64::NAN
    } else if ww == 0.0 && gg == 0.0 {
        1.0
    } else if ww == 0.0 || gg == 0.0 {
        0.0
    } else {
        dot / (ww.sqrt() * gg.sqrt())
    };
    Row {
        layer,
        op,
        tensor,
        shape: want.shape.clone(),
        dtype: got.dtype,
        max_err,
        mean_err: if n == 0 { 0.0 } else { sum_err / n as f64 },
        // A NaN cosine (sizes that differ) is below every threshold.
        cosine: if cosine.is_nan() { -1.0 } else { cosine },
        steps: step.map(|s| max_err / s),
    }
}

fn print_table(rows: &[Row], first: Option<usize>) {
    let width =
        |f: &dyn Fn(&Row) -> usize, min: usize| rows.iter().map(f).max().unwrap_or(0).max(min);
    let (wl, wo, wt) = (
        width(&|r| r.layer.len(), 5),
        width(&|r| r.op.len(), 2),
        width(&|r| r.tensor.len(), 6),
    );
    let shapes: Vec<String> = rows.iter().map(|r| shape_str(&r.shape)).collect();
    let ws = shapes.iter().map(String::len).max().unwrap_or(0).max(5);
    println!(
        "    {:>3}  {:<wl$}  {:<wo$}  {:<wt$}  {:<ws$}  {:<7}  {:>10}  {:>10}  {:>10}  {:>8}",
        "#", "layer", "op", "tensor", "shape", "dtype", "max|err|", "mean|err|", "cosine", "steps"
    );
    for (i, (r, shape)) in rows.iter().zip(&shapes).enumerate() {
        let steps = r
            .steps
            .map_or_else(|| "-".to_string(), |s| format!("{s:.2}"));
        println!(
            "{:>3} {:>3}  {:<wl$}  {:<wo$}  {:<wt$}  {:<ws$}  {:<7}  {:>10.3e}  {:>10.3e}  {:>10.6}  {:>8}",
            if Some(i) == first { ">>" } else { "" },
            i,
            r.layer,
            r.op,
            r.tensor,
            shape,
            r.dtype.name(),
            r.max_err,
            r.mean_err,
            r.cosine,
            steps
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(data: &[f64]) -> Value {
        Value {
            shape: vec![data.len()],
            dtype: DType::F32,
            data: data.to_vec(),
        }
    }

    fn row(want: &Value, got: &Observed) -> Row {
        measure("l".into(), "Op".into(), "t".into(), want, got)
    }

    #[test]
    fn derived_names_lead_back_to_the_onnx_value() {
        let onnx: HashMap<String, Value> = ["relu1", "flat", "a_quantized"]
            .into_iter()
            .map(|n| (n.to_string(), value(&[1.0])))
            .collect();
        assert_eq!(onnx_name("relu1", &onnx), Some("relu1"));
        assert_eq!(onnx_name("relu1_quantized", &onnx), Some("relu1"));
        assert_eq!(onnx_name("flat_float.int8", &onnx), Some("flat"));
        // An ONNX value whose own name ends like a derived one is matched as it is.
        assert_eq!(onnx_name("a_quantized", &onnx), Some("a_quantized"));
        // Layout copies and other tensors the converter adds hold no ONNX value.
        assert_eq!(onnx_name("relu1.nhwc", &onnx), None);
        assert_eq!(onnx_name("conv1+relu1.bias_int32", &onnx), None);
    }

    #[test]
    fn errors_cosine_and_steps_by_hand() {
        // want (3, 4); got int8 (13, 19) with scale 0.25 and zero point 1, i.e. (3, 4.5): errors 0
        // and 0.5, two steps.
        let got = Observed {
            data: vec![13.0, 19.0],
            dtype: DType::I8,
            quant: Some((0.25, 1)),
        };
        let r = row(&value(&[3.0, 4.0]), &got);
        assert_eq!((r.max_err, r.mean_err), (0.5, 0.25));
        // (9 + 18) / (5 * sqrt(9 + 20.25))
        let cosine = 27.0 / (5.0 * 29.25f64.sqrt());
        assert!((r.cosine - cosine).abs() < 1e-12, "{}", r.cosine);
        assert_eq!(r.steps, Some(2.0));
        // Against int8 values (onnxruntime's QuantizeLinear output) the int8 values are compared as
        // they are: one step off in the second.
        let int8 = Value {
            dtype: DType::I8,
            ..value(&[13.0, 18.0])
        };
        let r = row(&int8, &got);
        assert_eq!((r.max_err, r.steps), (1.0, Some(1.0)));
        // Two zero vectors agree; a zero one and another do not.
        let zero = Observed {
            data: vec![0.0, 0.0],
            dtype: DType::F32,
            quant: None,
        };
        let r = row(&value(&[0.0, 0.0]), &zero);
        assert_eq!((r.cosine, r.steps), (1.0, None));
        assert_eq!(row(&value(&[1.0, 0.0]), &zero).cosine, 0.0);
        // Sizes that differ are flagged whatever the threshold.
        assert_eq!(row(&value(&[1.0]), &zero).cosine, -1.0);
    }
}
