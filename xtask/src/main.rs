//! `cargo xtask <task>`: project automation in Rust, so that CI and a developer run the same steps.
//!
//! - `ci`: everything CI checks, installing what it needs first (rustup targets, a Python venv under
//!   `target/venv` for the golden-data check, Mesa's software Vulkan for the GPU suite). Fails on the
//!   first failing step.

mod bench;
mod boards;
mod conformance;
mod firmware;
mod gpu;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

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
        Some("ci") => ci(),
        Some("venv") => venv().map(|_| ()),
        Some("firmware") => firmware::qemu_check(&root()).and_then(|()| {
            let mps2 = root().join(
                "firmware-examples/qemu-mps2-an386/target/thumbv7em-none-eabihf/release/digits",
            );
            boards::check(&root(), &mps2)
        }),
        Some("dsp-check") => firmware::dsp_check::check_alone(&root()),
        Some("conformance") => venv().and_then(|_| conformance::run(&root(), &args[1..])),
        Some("bench") => venv().and_then(|py| bench::run(&root(), &py)),
        _ => {
            eprintln!("usage: cargo xtask <ci|firmware|dsp-check|conformance|bench|venv>\n  ci     run every check CI runs\n  firmware  build every firmware example, run the QEMU ones, dry-run ember flash on the board ones\n  dsp-check  ember-cortex-m's DSP int8 kernels against the reference under QEMU (M4F, M7)\n  conformance  ONNX node tests through Ember (--regen rewrites tests/conformance/node.txt)\n  bench  Ember next to onnxruntime on the bundled models (writes target/bench/report.md)\n  venv   create target/venv with the pinned Python test packages");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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

struct Steps {
    done: Vec<(String, f64)>,
}

impl Steps {
    fn step(&mut self, name: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        eprintln!("\n==> {name}");
        let t = Instant::now();
        f().with_context(|| format!("step `{name}`"))?;
        self.done
            .push((name.to_string(), t.elapsed().as_secs_f64()));
        Ok(())
    }
}

fn ci() -> Result<()> {
    let start = Instant::now();
    let mut s = Steps { done: Vec::new() };
    s.step("install rust targets and components", || {
        let mut args = vec!["target", "add"];
        args.extend_from_slice(NO_STD_TARGETS);
        run("rustup", &args)?;
        run("rustup", &["component", "add", "rustfmt", "clippy"])
    })?;
    // The Python venv (onnx's node tests, onnxruntime) comes first: the test suite reads from it.
    s.step("python venv with the pinned test packages", || {
        venv().map(|_| ())
    })?;
    s.step("format", || {
        run("cargo", &["fmt", "--all", "--", "--check"])
    })?;
    s.step("clippy", || {
        run(
            "cargo",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                // The CLI's GPU path too (`ember run --device`, `ember devices`).
                "--features",
                "ember-cli/gpu",
                "--",
                "-D",
                "warnings",
            ],
        )
    })?;
    s.step("ember-core for bare-metal targets (no_std, no alloc)", || {
        for target in NO_STD_TARGETS {
            run(
                "cargo",
                &["build", "-p", "ember-core", "--no-default-features", "--target", target],
            )?;
        }
        run(
            "cargo",
            &["clippy", "-p", "ember-core", "--no-default-features", "--target", "thumbv7em-none-eabihf", "--", "-D", "warnings"],
        )?;
        let tree = output(
            "cargo",
            &["tree", "-p", "ember-core", "--no-default-features", "-e", "normal", "--prefix", "none"],
        )?;
        eprintln!("ember-core's normal dependencies (all build for thumbv6m-none-eabi, which has no std):\n{tree}");
        Ok(())
    })?;
    s.step("firmware under QEMU matches onnxruntime", || {
        firmware::qemu_check(&root())?;
        // QEMU and the defmt firmware are there now: host-tools/tests/qemu_cli.rs must run, not skip.
        std::env::set_var("EMBER_REQUIRE_QEMU", "1");
        Ok(())
    })?;
    s.step(
        "real-board firmware builds and fits its chip (ember flash --dry-run)",
        || {
            let mps2 = root().join(
                "firmware-examples/qemu-mps2-an386/target/thumbv7em-none-eabihf/release/digits",
            );
            boards::check(&root(), &mps2)
        },
    )?;
    // The GPU suite (ember-gpu's tests) runs inside `tests` below, on lavapipe, failing without a device.
    s.step("software Vulkan (lavapipe) for the GPU suite", || {
        gpu::install_lavapipe()?;
        std::env::set_var("EMBER_REQUIRE_GPU", "1");
        Ok(())
    })?;
    s.step("tests", || {
        // With the CLI's GPU path, so that `host-tools/tests/gpu_cli.rs` runs on lavapipe.
        run(
            "cargo",
            &[
                "test",
                "--workspace",
                "--all-targets",
                "--features",
                "ember-cli/gpu",
            ],
        )
    })?;
    s.step("doc tests", || {
        run("cargo", &["test", "--workspace", "--doc"])
    })?;
    s.step("golden data reproduces with onnxruntime", || {
        let py = venv()?;
        run(
            py.to_str().context("venv path is not UTF-8")?,
            &["tests/models/check_goldens.py"],
        )
    })?;
    s.step("ONNX node-test conformance (allow-list, no panics)", || {
        conformance::ci_check(&root())
    })?;
    s.step("README command 1: the demo", || {
        run(
            "cargo",
            &["run", "--release", "-p", "ember-cli", "--", "demo"],
        )
    })?;

    eprintln!("\nci summary:");
    for (name, secs) in &s.done {
        eprintln!("  ok  {secs:7.1} s  {name}");
    }
    eprintln!(
        "ci: {} steps passed, 0 failed, in {:.1} min",
        s.done.len(),
        start.elapsed().as_secs_f64() / 60.0
    );
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
