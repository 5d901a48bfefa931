//! Clippy as the compiler of the workspace's own crates, so that one build both lints and makes the
//! binaries.
//!
//! `cargo clippy` is `cargo check` with `clippy-driver` as the workspace's rustc wrapper
//! (`RUSTC_WORKSPACE_WRAPPER`) and its lint arguments in `CLIPPY_ARGS`. `clippy-driver` is rustc with
//! clippy's lints added, so the same wrapper on `cargo build` or `cargo test` lints every workspace crate
//! while it compiles it, and the dependencies (which cargo never hands to the wrapper) are compiled once
//! for the build instead of once more, in check mode, for a separate clippy run: that check build was
//! 11 of the 64 minutes of a cold CI run on the slower machine (issue 35).
//!
//! The wrapper is part of each workspace crate's build hash, so every cargo command that should reuse a
//! linted build must carry it too ([`lint_while_building`]); a command without it builds the workspace
//! crates again (not the dependencies) into files of their own.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};

/// `CLIPPY_ARGS` as `cargo clippy -- -D warnings` sets it: the arguments joined by this separator.
const DENY_WARNINGS: &str = "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__";

/// The toolchain's `clippy-driver` (the one `rust-toolchain.toml` selects in the checkout).
fn driver() -> Result<&'static PathBuf> {
    static DRIVER: OnceLock<PathBuf> = OnceLock::new();
    if let Some(d) = DRIVER.get() {
        return Ok(d);
    }
    let path = crate::output("rustup", &["which", "clippy-driver"])
        .context("clippy-driver not found: rustup component add clippy")?;
    let path = PathBuf::from(path.trim());
    deny_is_honoured(&path)?;
    Ok(DRIVER.get_or_init(|| path))
}

/// Makes `cmd` (a cargo command) lint the workspace's crates with `-D warnings` as it builds them. Test
/// processes inherit the two variables: a test that builds a crate of its own removes them
/// (`host-tools/tests/emit.rs`).
pub fn lint_while_building(cmd: &mut Command) -> Result<&mut Command> {
    Ok(cmd
        .env("RUSTC_WORKSPACE_WRAPPER", driver()?)
        .env("CLIPPY_ARGS", DENY_WARNINGS))
}

/// The lint step must be able to fail: `clippy-driver` reads `CLIPPY_ARGS` in a form private to clippy
/// and cargo-clippy, so before relying on it this checks that a file with a clippy warning
/// (`len_zero`) fails to compile under it.
fn deny_is_honoured(driver: &std::path::Path) -> Result<()> {
    let dir = crate::root().join("target").join("clippy-probe");
    std::fs::create_dir_all(&dir)?;
    let src = dir.join("probe.rs");
    std::fs::write(
        &src,
        "//! A file with one clippy warning.\npub fn empty(v: &[u8]) -> bool {\n    v.len() == 0\n}\n",
    )?;
    let out = Command::new(driver)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .arg("--out-dir")
        .arg(&dir)
        .arg(&src)
        .env("CLIPPY_ARGS", DENY_WARNINGS)
        .env("CARGO_PRIMARY_PACKAGE", "1")
        .output()
        .with_context(|| format!("cannot start {}", driver.display()))?;
    let text = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || !text.contains("len_zero") {
        bail!(
            "{} did not fail on a clippy warning with CLIPPY_ARGS={DENY_WARNINGS} (exit {}); the lint \
             step relies on it: run `cargo clippy --all-targets --workspace -- -D warnings` instead and \
             update xtask/src/clippy.rs\n{text}",
            driver.display(),
            out.status
        );
    }
    Ok(())
}
