//! Ember's side of a model in `cargo xtask bench`: converted once (its figures from `ember bench
//! --json`), its output written for the agreement check, then timed by `ember bench` on the blob.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde_json::Value;

use super::cases::Case;
use super::{json_of, run_quiet, slug, tflm, Options, Row};

/// Ember's side of one model: the converted blob, its output, and how many calls fill a round's budget.
pub struct EmberPlan {
    blob: PathBuf,
    /// Ember's first output on the input (`ember run --output`).
    pub output: PathBuf,
    repeat: usize,
    warmup: usize,
}

/// Ember's conversion of the model (its figures into `row.ember`), the blob the rounds time, its output
/// for the agreement check, and the call counts that fill a round's budget.
pub fn prepare(
    ember: &Path,
    dir: &Path,
    case: &Case,
    input_name: Option<&str>,
    opts: &Options,
    row: &mut Row,
) -> Result<EmberPlan> {
    // The input's name and shape: `ember bench` reads the shape from the file, but finds the name by a
    // first conversion without shapes, which fails where a non-batch dimension is dynamic.
    let name = input_name.context("no input name (the peers could not load the model)")?;
    let dims = npy_shape(&case.input)?
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let shape = format!("{name}={dims}");
    // One call of the ONNX model, without warm-up: Ember's figures (ops, memory, planner) and a first time.
    let probe = json_of(
        Command::new(ember)
            .arg("bench")
            .arg(&case.onnx)
            .arg("--input")
            .arg(&case.input)
            .args(["--shape", &shape])
            .args(["--repeat", "1", "--warmup", "0", "--json"]),
        "ember bench",
    );
    let probe = match probe {
        Ok(p) => p,
        Err(e) => {
            row.ember = Err(tflm::one_line(&format!("{e:#}")));
            return Err(e);
        }
    };
    let once_s = probe
        .get("median_us")
        .and_then(Value::as_f64)
        .unwrap_or(1.0)
        / 1e6;
    row.ember = Ok(probe);
    let slug = slug(&case.name);
    let blob = dir.join("blobs").join(format!("{slug}.ember"));
    let output = dir.join("blobs").join(format!("{slug}.y.npy"));
    run_quiet(
        Command::new(ember)
            .arg("convert")
            .arg(&case.onnx)
            .arg("-o")
            .arg(&blob)
            .args(["--shape", &shape]),
        "ember convert",
    )?;
    run_quiet(
        Command::new(ember)
            .arg("run")
            .arg(&blob)
            .arg("--input")
            .arg(&case.input)
            .arg("--output")
            .arg(&output),
        "ember run",
    )?;
    let repeat = ((opts.budget_s / once_s.max(1e-7)) as usize).clamp(3, opts.max_runs.max(3));
    Ok(EmberPlan {
        blob,
        output,
        repeat,
        warmup: (repeat / 10).clamp(1, 20),
    })
}

/// One `ember bench` of the blob: its median in µs and its workers.
pub fn time(ember: &Path, plan: &EmberPlan, input: &Path, threads: usize) -> Result<(f64, u64)> {
    let v = json_of(
        Command::new(ember)
            .arg("bench")
            .arg(&plan.blob)
            .arg("--input")
            .arg(input)
            .args(["--threads", &threads.to_string()])
            .args(["--repeat", &plan.repeat.to_string()])
            .args(["--warmup", &plan.warmup.to_string()])
            .arg("--json"),
        "ember bench",
    )?;
    Ok((
        v.get("median_us")
            .and_then(Value::as_f64)
            .context("ember bench printed no median")?,
        v.get("threads").and_then(Value::as_u64).unwrap_or(0),
    ))
}

fn npy_shape(path: &Path) -> Result<Vec<usize>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let npy = npyz::NpyFile::new(&bytes[..])
        .with_context(|| format!("{} is not a .npy file", path.display()))?;
    Ok(npy.shape().iter().map(|&d| d as usize).collect())
}
