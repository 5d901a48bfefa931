//! `cargo xtask conformance`: the ONNX backend node tests (shipped by `onnx==1.22.0` in `target/venv`)
//! through Ember, by the `conformance` binary of `ember-tests` (see `tests/conformance/README.md`).
//!
//! - `run`: every case; prints counts overall and per op, writes `target/conformance/report.md`;
//!   `--regen` rewrites the allow-list `tests/conformance/node.txt`; other arguments go to the binary.
//! - `ci_check`: what CI enforces: every case runs, every allow-listed case passes, and none panics.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Runs the harness over every case; `args` are passed to it (`--regen`, `--filter S`, `--verbose`,
/// `--allow-list`). Needs `target/venv` (`cargo xtask venv`).
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let node_dir = node_dir(root)?;
    harness(root, &node_dir, args)
}

/// The CI step: runs every case, fails if an allow-listed case does not pass ("N of M manifest cases
/// pass" is printed) or if any case panics the converter or the runtime. Expects `target/venv` to
/// exist (call `venv()` first).
pub fn ci_check(root: &Path) -> Result<()> {
    let node_dir = node_dir(root)?;
    harness(root, &node_dir, &[])
}

/// The node-test folder of the `onnx` package in `target/venv`, asked of its Python.
fn node_dir(root: &Path) -> Result<PathBuf> {
    let python = root.join("target").join("venv").join("bin").join("python");
    if !python.exists() {
        bail!(
            "{} does not exist: run `cargo xtask venv` first (it installs onnx==1.22.0, which ships \
             the node tests)",
            python.display()
        );
    }
    let out = Command::new(&python)
        .args([
            "-c",
            "import onnx, os; print(os.path.dirname(onnx.__file__))",
        ])
        .output()
        .with_context(|| format!("cannot start {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "the venv's python cannot import onnx: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let onnx = String::from_utf8(out.stdout).context("onnx path is not UTF-8")?;
    let dir = Path::new(onnx.trim()).join("backend/test/data/node");
    if !dir.is_dir() {
        bail!(
            "{} does not exist: the node tests ship with onnx 1.22.0 and older; check \
             tests/requirements.txt",
            dir.display()
        );
    }
    Ok(dir)
}

/// The conformance harness on `node_dir` with `args`: the binary CI's host build made when it is there
/// (`cargo run -p ember-tests` would resolve another feature set and rebuild its dependencies), else
/// `cargo run -p ember-tests --bin conformance` (a debug build: the whole suite runs in seconds).
fn harness(root: &Path, node_dir: &Path, args: &[String]) -> Result<()> {
    let node = node_dir.to_str().context("node-test path is not UTF-8")?;
    let built = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("debug")
        .join("conformance");
    let mut cmd = if std::env::var_os("EMBER_CI_BUILT").is_some() && built.exists() {
        Command::new(&built)
    } else {
        let mut cargo = Command::new("cargo");
        cargo.args([
            "run",
            "--quiet",
            "-p",
            "ember-tests",
            "--bin",
            "conformance",
            "--",
        ]);
        cargo
    };
    cmd.current_dir(root).args(["--node-dir", node]).args(args);
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .context("cannot start the conformance harness")?;
    if !status.success() {
        bail!("the conformance harness failed ({status}); see the lines above and target/conformance/report.md");
    }
    Ok(())
}
