//! `cargo xtask bench`: Ember next to onnxruntime on the same models, inputs and machine, in one run.
//!
//! For every model under `tests/models/*/model.onnx` (batch-1 input `x1.npy`) and the converter's op models
//! (`converter/tests/models/ops/<case>.onnx` with `<case>.x.npy`), it runs `ember bench --json` (release
//! build) and `xtask/bench/ort_bench.py` (onnxruntime, one thread and default threads), then prints a
//! table and writes it to `target/bench/report.md`. A benchmark, not a test: it asserts nothing about speed.
//! A second table puts Ember's int8 digits CNN next to the same int8 network in TFLM ([`tflm`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

mod tflm;

/// One model to measure: a label, the ONNX file, and an input file.
struct Case {
    name: String,
    onnx: PathBuf,
    input: PathBuf,
}

fn cases(root: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    let models = root.join("tests").join("models");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&models)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    for dir in dirs {
        let (onnx, input) = (dir.join("model.onnx"), dir.join("x1.npy"));
        if onnx.exists() && input.exists() {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            cases.push(Case { name, onnx, input });
        }
    }
    let ops = root
        .join("converter")
        .join("tests")
        .join("models")
        .join("ops");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&ops)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for onnx in files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
    {
        let stem = onnx
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let input = ops.join(format!("{stem}.x.npy"));
        if input.exists() {
            cases.push(Case {
                name: format!("ops/{stem}"),
                onnx,
                input,
            });
        }
    }
    Ok(cases)
}

fn json_of(cmd: &mut Command, what: &str) -> Result<Value> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).with_context(|| format!("{what} printed no JSON: {text}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// Runs the benchmark. `python` is the venv's interpreter (with onnxruntime).
pub fn run(root: &Path, python: &Path) -> Result<()> {
    let status = Command::new("cargo")
        .args(["build", "--release", "--quiet", "-p", "ember-cli"])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("cannot build the ember CLI");
    }
    // Where the `cargo build` above put it: CARGO_TARGET_DIR, when set, moves it out of `target/`.
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let ember = target.join("release").join("ember");
    let mut rows = Vec::new();
    for case in cases(root)? {
        eprintln!("bench {}", case.name);
        let e = json_of(
            Command::new(&ember)
                .arg("bench")
                .arg(&case.onnx)
                .arg("--input")
                .arg(&case.input)
                .arg("--json"),
            "ember bench",
        )?;
        let o = json_of(
            Command::new(python)
                .arg(root.join("xtask/bench/ort_bench.py"))
                .arg(&case.onnx)
                .arg(&case.input),
            "ort_bench.py",
        )?;
        let (ember_us, ort1, ortn) = (
            num(&e, "median_us"),
            num(&o, "single_median_us"),
            num(&o, "default_median_us"),
        );
        let (act, lb) = (num(&e, "activation_bytes"), num(&e, "lower_bound_bytes"));
        rows.push(format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {} | {} | {} | {:.2} | {} |",
            case.name,
            e.get("ops").and_then(Value::as_u64).unwrap_or(0),
            ember_us,
            ort1,
            ortn,
            ember_us / ort1,
            e.get("arena_bytes").and_then(Value::as_u64).unwrap_or(0),
            lb,
            e.get("blob_bytes").and_then(Value::as_u64).unwrap_or(0),
            if lb > 0.0 { act / lb } else { 1.0 },
            // Null (an .ember input) or zero: no greedy figure to compare with.
            match e.get("greedy_activation_bytes").and_then(Value::as_f64) {
                Some(greedy) if greedy > 0.0 => format!("{:.2}", act / greedy),
                _ => "-".to_string(),
            },
        ));
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let mut report = String::new();
    report.push_str("# Ember benchmark\n\n");
    report.push_str(&format!(
        "One run on {cpu}, {} cores. Latency: median of 200 single-inference runs after 20 warm-up runs, \
         same input file for both engines. Ember runs its portable reference kernels on one thread; onnxruntime \
         runs with 1 thread and with its default thread count. `plan / lower bound`: the planned activation \
         bytes over the largest sum of tensors live at one step. `plan / greedy`: the planned activation bytes \
         over those of TFLM's greedy-by-size planner on the same tensors (Ember's planner keeps the better of \
         the two, so at most 1.00).\n\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    ));
    report.push_str("| model | ops | Ember µs | ORT 1-thread µs | ORT default µs | Ember / ORT-1 | arena bytes | lower bound | blob bytes | plan / lower bound | plan / greedy |\n");
    report.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for r in &rows {
        report.push_str(r);
        report.push('\n');
    }
    report.push_str(&tflm::section(root, &ember));
    report.push_str("\n## Firmware (QEMU)\n\n");
    match std::fs::read_to_string(root.join("target/firmware/report.md")) {
        Ok(firmware) => {
            report.push_str("From the last `cargo xtask firmware` (or `ci`) run:\n\n");
            report.push_str(&firmware);
        }
        Err(_) => report.push_str("not available: run `cargo xtask firmware` first\n"),
    }
    let dir = root.join("target").join("bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("report.md"), &report)?;
    println!("{report}");
    println!("wrote target/bench/report.md");
    Ok(())
}
