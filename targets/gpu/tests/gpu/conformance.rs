//! The ONNX backend node cases that pass on the CPU (`tests/conformance/node.txt`, run by `cargo xtask
//! conformance`) through a Vulkan session: the same cases, conversions and tolerances as the CPU's
//! harness (`ember_tests::conformance`), only the runner differs. Integer and bool outputs are compared
//! exactly; they come back through `DeviceOutput`'s f32 values, exact up to 2^24.
//!
//! Needs the node tests (`onnx==1.22.0` in `target/venv`, which `cargo xtask ci` makes) and a Vulkan
//! device; skips (printing why) without them unless `EMBER_REQUIRE_GPU=1`.

use std::collections::{BTreeMap, BTreeSet};
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

/// Where the ops of one name ran over the cases: on the device, on the host, and why on the host.
#[derive(Default)]
struct Placement {
    device: usize,
    host: usize,
    why: BTreeSet<String>,
}

/// A host op's reason without the case's tensor ids: `int64 tensors`, or the lowering's words.
fn reason(why: &str) -> String {
    match why.split_once(", which the device does not hold") {
        Some((head, _)) => format!("{} tensors", head.rsplit(' ').next().unwrap_or(head)),
        None => why.to_string(),
    }
}

/// Runs `blob` on `device` through `DeviceSession`, counting into `seen` where each op ran, by op
/// name.
fn run_on(
    device: Device,
    blob: &[u8],
    inputs: &[&[u8]],
    seen: &Mutex<BTreeMap<&'static str, Placement>>,
) -> Result<Vec<RunOutput>, String> {
    let blob = AlignedBuf::from_bytes(blob);
    let model = ember_core::Model::parse(blob.as_bytes()).map_err(|e| format!("parse: {e}"))?;
    let dtype = |id: u32| model.tensor(id as usize).map(|t| t.dtype);
    let mut session =
        DeviceSession::new(blob.as_bytes(), device).map_err(|e| format!("session: {e}"))?;
    if let Ok(mut seen) = seen.lock() {
        let host = session.host_ops();
        for i in 0..model.op_count() {
            let Some(op) = model.op(i) else { continue };
            let p = seen.entry(op.kind.name()).or_default();
            match host.iter().find(|(index, _, _)| *index == i) {
                Some((_, _, why)) => {
                    p.host += 1;
                    p.why.insert(reason(why));
                }
                None => p.device += 1,
            }
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
    let seen = Mutex::new(BTreeMap::new());
    let runner = |blob: &[u8], inputs: &[&[u8]]| run_on(gpu, blob, inputs, &seen);
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
    let seen = seen.into_inner().unwrap_or_default();
    let listed: Vec<String> = seen
        .iter()
        .filter(|(_, p)| p.host > 0)
        .map(|(op, p)| format!("{op} {}", p.host))
        .collect();
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

    // docs/gpu-ops.md: where each op ran, from this run.
    let mut page = String::from(
        "# Ops on a GPU\n\nGenerated by `EMBER_BLESS=1 cargo test -p ember-gpu --test gpu node_cases` \
         from the ONNX node cases the CPU passes (`tests/conformance/node.txt`), each run in a Vulkan \
         session (lavapipe); do not edit by hand. A GPU session runs an op on the device when it has \
         a kernel for it and the op's tensors are f32 or int8; otherwise on the host CPU inside the \
         same session (`DeviceSession::host_ops`, `ember inspect --device`), with the reference \
         kernels. Counts are op instances over the cases.\n\n| op | on the device | on the host | \
         why on the host |\n| --- | ---: | ---: | --- |\n",
    );
    for (op, p) in &seen {
        let why: Vec<&str> = p.why.iter().map(String::as_str).collect();
        page.push_str(&format!(
            "| {op} | {} | {} | {} |\n",
            p.device,
            p.host,
            why.join("; ")
        ));
    }
    let path = root.join("docs/gpu-ops.md");
    if std::env::var_os("EMBER_BLESS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == page,
        "docs/gpu-ops.md is stale: run EMBER_BLESS=1 cargo test -p ember-gpu --test gpu node_cases"
    );
}
