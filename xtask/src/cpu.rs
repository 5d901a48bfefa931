//! `ember-cpu`'s checks beyond a host `cargo test`: the bundled models converted on the host for its model
//! test (`targets/cpu/tests/models.rs`), and its tests cross-built for aarch64 (Jetson, Raspberry Pi class
//! CPUs) and run under QEMU user mode: all of them on `-cpu max` (which has the dot-product extension, so
//! scalar, NEON and NEON dotprod all run), and the detection and the models on `-cpu cortex-a57` (NEON
//! without the extension). QEMU checks results only, never speed.
//!
//! The cross linker is Debian's `gcc-aarch64-linux-gnu` (installed when missing); QEMU is Debian's
//! `qemu-user-static` unpacked under `target/qemu-user/` ([`apt::unpack`]; its binaries are static, so
//! nothing else is needed). Only `ember-cpu` and its dependencies are built for aarch64.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::apt::{self, apt_get};
use crate::firmware::install::qemu_version;
use crate::run_command;

/// The variable naming the folder of converted models that `targets/cpu/tests/models.rs` reads.
pub const MODELS_ENV: &str = "EMBER_CPU_MODELS";

const TARGET: &str = "aarch64-unknown-linux-gnu";
const LINKER: &str = "aarch64-linux-gnu-gcc";
/// The aarch64 sysroot of Debian's `libc6-arm64-cross` (QEMU's `-L`, where the dynamic loader is).
const SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// The QEMU CPUs the tests run on, the best level `ember_cpu::Isa` must detect on each, and which tests
/// run there. `max` has the dot-product extension, so every level (scalar, NEON, NEON dotprod) is
/// tested on it with the whole suite; on `cortex-a57` (NEON alone) the library's tests and the models
/// check that the detection stops at NEON and that the tables it hands out run there (the whole suite
/// again would test the same kernels a second time, for a third of the step's time).
const QEMU_CPUS: [(&str, &str, &[&str]); 2] = [
    ("cortex-a57", "neon", &["--lib", "--test", "models"]),
    ("max", "neon-dotprod", &[]),
];

/// Where [`convert_models`] writes for the host's model test; `variant` names another folder beside it
/// (CI's aarch64 step converts with the release build, in the lane beside the host's tests).
pub fn models_dir(root: &Path, variant: &str) -> PathBuf {
    root.join("target").join(format!("cpu-models{variant}"))
}

/// Converts every bundled model with `ember` (the host's CLI) into `dir` and writes the
/// `manifest.tsv` the model test reads: float models checked against their golden output (`y1.npy`),
/// int8 ones (`*_qdq`, and each float model with a `calib.npy` quantized by `ember convert --quantize
/// int8`) against the reference kernels.
pub fn convert_models(root: &Path, ember: &Path, dir: PathBuf) -> Result<PathBuf> {
    let models = root.join("tests").join("models");
    std::fs::create_dir_all(&dir)?;
    let mut manifest = String::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&models)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for folder in entries {
        let onnx = folder.join("model.onnx");
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !onnx.exists() {
            continue;
        }
        let mut add =
            |name: &str, calib: Option<&Path>, input: PathBuf, golden: Option<PathBuf>| {
                let blob = dir.join(format!("{name}.ember"));
                let mut cmd = Command::new(ember);
                cmd.arg("convert").arg(&onnx).arg("-o").arg(&blob);
                if let Some(calib) = calib {
                    cmd.args(["--quantize", "int8", "--calibrate"]).arg(calib);
                }
                run_command(&mut cmd)?;
                let (kind, golden) = match &golden {
                    Some(g) => ("f32", g.display().to_string()),
                    None => ("int8", "-".to_string()),
                };
                writeln!(
                    manifest,
                    "{name}\t{kind}\t{}\t{}\t{golden}",
                    blob.display(),
                    input.display()
                )?;
                anyhow::Ok(())
            };
        if let Some(base) = name.strip_suffix("_qdq") {
            add(&name, None, models.join(base).join("x1.npy"), None)?;
            continue;
        }
        let (x, y) = (folder.join("x1.npy"), folder.join("y1.npy"));
        if x.exists() && y.exists() {
            add(&name, None, x.clone(), Some(y))?;
            let calib = folder.join("calib.npy");
            if calib.exists() {
                add(&format!("{name}-int8"), Some(&calib), x, None)?;
            }
        }
    }
    ensure!(
        !manifest.is_empty(),
        "no bundled model to convert in {}",
        models.display()
    );
    std::fs::write(dir.join("manifest.tsv"), manifest)?;
    eprintln!("converted the bundled models into {}", dir.display());
    Ok(dir)
}

/// Cross-builds `ember-cpu`'s tests for aarch64 and runs them under QEMU on each of [`QEMU_CPUS`], with the
/// models of [`convert_models`] in `models`.
pub fn aarch64(root: &Path, models: &Path) -> Result<()> {
    let qemu = tools(root)?;
    let cargo = |runner: Option<(&str, &str, &[&str])>| {
        let mut cmd = Command::new("cargo");
        // Optimized, with debug assertions (the `qemu` profile): unoptimized code under QEMU ran the
        // suite in 13 minutes.
        cmd.args([
            "test",
            "--profile",
            "qemu",
            "-p",
            "ember-cpu",
            "--target",
            TARGET,
        ])
        .current_dir(root)
        .env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER", LINKER);
        // The NEON code and what only aarch64 compiles are linted as the host's code is (warnings
        // fail), by clippy as the compiler of this build (`clippy.rs`); the runs below carry the same
        // wrapper, so they run what this build made.
        crate::clippy::lint_while_building(&mut cmd)?;
        match runner {
            None => {
                cmd.args(["--all-targets", "--no-run"]);
            }
            Some((cpu, best, tests)) => {
                cmd.args(tests)
                    .env(
                        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
                        format!("{} -L {SYSROOT} -cpu {cpu}", qemu.display()),
                    )
                    .env(MODELS_ENV, models)
                    .env("EMBER_REQUIRE_MODELS", "1")
                    .env("EMBER_EXPECT_BEST_ISA", best);
            }
        }
        anyhow::Ok(cmd)
    };
    run_command(&mut cargo(None)?)?;
    for (cpu, best, tests) in QEMU_CPUS {
        eprintln!("ember-cpu's tests on aarch64, QEMU -cpu {cpu} (best level: {best})");
        run_command(&mut cargo(Some((cpu, best, tests)))?)?;
    }
    Ok(())
}

/// Installs what the aarch64 step needs (the Rust target, Debian's cross linker and C library, QEMU user
/// mode) when it is missing; returns QEMU's path. CI runs it before it starts its second lane, so that
/// no two lanes run `apt-get` at once.
pub fn tools(root: &Path) -> Result<PathBuf> {
    cross_linker()?;
    let qemu = qemu_user(root)?;
    crate::run("rustup", &["target", "add", TARGET])?;
    Ok(qemu)
}

/// Installs Debian's aarch64 cross compiler and C library when they are missing.
fn cross_linker() -> Result<()> {
    let present = Command::new(LINKER)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        && Path::new(SYSROOT).join("lib").join("crt1.o").exists();
    if present {
        return Ok(());
    }
    apt_get(&[
        "install",
        "-y",
        "--no-install-recommends",
        "--no-remove",
        "gcc-aarch64-linux-gnu",
        "libc6-dev-arm64-cross",
    ])
}

/// `qemu-aarch64-static` from PATH, or from `target/qemu-user/` (unpacked there now if missing).
fn qemu_user(root: &Path) -> Result<PathBuf> {
    let binary = "qemu-aarch64-static";
    let dir = root.join("target").join("qemu-user");
    let unpacked = dir.join("usr").join("bin").join(binary);
    for candidate in [PathBuf::from(binary), unpacked.clone()] {
        if qemu_version(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    eprintln!(
        "{binary} not found: unpacking Debian's qemu-user-static into {}",
        dir.display()
    );
    apt::unpack(&["qemu-user-static"], &dir)?;
    let version = qemu_version(&unpacked)
        .with_context(|| format!("the unpacked {} does not run", unpacked.display()))?;
    eprintln!("{version}");
    Ok(unpacked)
}
