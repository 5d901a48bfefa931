//! The ONNX backend node cases that pass on the CPU (`tests/conformance/node.txt`, run by `cargo xtask
//! conformance`) through a Vulkan session: the same cases, conversions and tolerances as the CPU's
//! harness (`ember_tests::conformance`), only the runner differs. Integer and bool outputs are compared
//! exactly; they come back through `DeviceOutput`'s f32 values, exact up to 2^24.
//!
//! Needs the node tests (`onnx==1.22.0` in `target/venv`, which `cargo xtask ci` makes) and a Vulkan
//! device; skips (printing why) without them unless `EMBER_REQUIRE_GPU=1`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use crate::common::vulkan;
use ember_core::format::DType;
use ember_core::AlignedBuf;
use ember_gpu::{Device, DeviceSession};
use ember_tests::conformance::case::RunOutput;
use ember_tests::conformance::manifest::Manifest;
use ember_tests::conformance::{find_node_dir, list_cases, run_cases, Counts, Outcome};

/// A tensor's little-endian bytes as f32 values (what `DeviceInput::write_f32` takes).
fn to_f32(dtype: DType, bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(dtype.size())
        .map(|c| ember_core::ops::element::scalar_value(dtype, c) as f32)
        .collect()
}

/// Runs `blob` on `device` through `DeviceSession`, counting into `host` the ops the session runs
/// on the host, by op name.
fn run_on(
    device: Device,
    blob: &[u8],
    inputs: &[&[u8]],
    host: &Mutex<BTreeMap<&'static str, usize>>,
) -> Result<Vec<RunOutput>, String> {
    let blob = AlignedBuf::from_bytes(blob);
    let model = ember_core::Model::parse(blob.as_bytes()).map_err(|e| format!("parse: {e}"))?;
    let dtype = |id: u32| model.tensor(id as usize).map(|t| t.dtype);
    let mut session =
        DeviceSession::new(blob.as_bytes(), device).map_err(|e| format!("session: {e}"))?;
    if let Ok(mut counts) = host.lock() {
        for (_, op, _) in session.host_ops() {
            *counts.entry(op).or_default() += 1;
        }
    }
    for (i, bytes) in inputs.iter().enumerate() {
        let t = dtype(model.inputs()[i]).ok_or("an input record")?;
        session
            .input(i)
            .and_then(|mut x| x.write_f32(&to_f32(t, bytes)))
            .map_err(|e| format!("input {i}: {e}"))?;
    }
    session.run().map_err(|e| format!("run: {e}"))?;
    (0..model.outputs().len())
        .map(|k| {
            let t = dtype(model.outputs()[k]).ok_or("an output record")?;
            let out = session.output(k).map_err(|e| format!("output {k}: {e}"))?;
            let bytes = out
                .as_f32()
                .iter()
                .flat_map(|&v| {
                    ember_core::ops::element::scalar_bytes(t, f64::from(v))[..t.size()].to_vec()
                })
                .collect();
            Ok(RunOutput {
                dims: out.dims().iter().map(|&d| d as usize).collect(),
                dtype: t,
                bytes,
            })
        })
        .collect()
}

#[test]
fn node_cases_that_pass_on_the_cpu_pass_on_vulkan() {
    let Some(gpu) = vulkan() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(node_dir) = find_node_dir(&root) else {
        assert!(
            std::env::var("EMBER_REQUIRE_GPU").as_deref() != Ok("1"),
            "EMBER_REQUIRE_GPU=1 but the ONNX node tests are not in target/venv (cargo xtask venv)"
        );
        eprintln!("skipping: no ONNX node tests under target/venv (cargo xtask venv)");
        return;
    };
    let text = std::fs::read_to_string(root.join("tests/conformance/node.txt")).unwrap();
    let manifest = Manifest::parse(&text).unwrap();
    let cases: Vec<String> = list_cases(&node_dir)
        .unwrap()
        .into_iter()
        .filter(|c| manifest.entries.contains_key(c))
        .collect();
    let host = Mutex::new(BTreeMap::new());
    let runner = |blob: &[u8], inputs: &[&[u8]]| run_on(gpu, blob, inputs, &host);
    let results = run_cases(
        &node_dir,
        &cases,
        &|c| manifest.config(c),
        &runner,
        1,
        &|_, _| {},
    );
    let counts = Counts::of(&results);
    let failing: Vec<String> = results
        .iter()
        .filter(|r| !matches!(r.outcome, Outcome::Pass))
        .map(|r| format!("{}: {}", r.name, r.outcome.message()))
        .collect();
    eprintln!(
        "{} of {} CPU-passing node cases pass on {gpu}",
        counts.pass,
        cases.len()
    );
    let host = host.into_inner().unwrap_or_default();
    let listed: Vec<String> = host.iter().map(|(op, n)| format!("{op} {n}")).collect();
    eprintln!(
        "ops run on the host inside the session, by kind: {}",
        listed.join(", ")
    );
    for f in &failing {
        eprintln!("  {f}");
    }
    assert!(
        failing.is_empty(),
        "{} cases do not pass on {gpu}",
        failing.len()
    );
}
