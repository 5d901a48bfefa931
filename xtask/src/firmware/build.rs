//! Building the firmware crates: every firmware example, board and variant builds in one shared cargo
//! target directory, `target/firmware/cargo`, so that the bare-metal dependencies (cortex-m, defmt,
//! ember-core, ...) compile once per target triple and feature set instead of once per crate and variant.
//! Cargo keeps each triple, feature set and crate apart inside it; a binary of the same name from another
//! crate or variant overwrites the last one, so each ELF is copied out to
//! `target/firmware/elf/<crate>/<variant>/<bin>` as soon as it is built.
//!
//! The crates' link arguments are in their build scripts, not in `rustflags`, so that they share
//! dependencies (see `ember_firmware_build::link_args`); a `RUSTFLAGS` from the environment would also
//! change every dependency's build, so it is cleared here.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use super::run;

/// Where firmware products go, under the checkout's `target/` (which `.ci/run` may link to a cache).
pub fn firmware_dir(root: &Path) -> PathBuf {
    root.join("target").join("firmware")
}

/// The cargo target directory all firmware builds share.
fn cargo_target_dir(root: &Path) -> PathBuf {
    firmware_dir(root).join("cargo")
}

/// A `cargo` command for the firmware crate in `dir` (relative to `root`), building into the shared target
/// directory with the crate's own `.cargo/config.toml` (its target triple and runner).
fn cargo(root: &Path, dir: &str, model: Option<(&str, &Path)>) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root.join(dir))
        .env("CARGO_TARGET_DIR", cargo_target_dir(root))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    if let Some((var, model)) = model {
        cmd.env(var, model);
    }
    cmd
}

/// One firmware build: binary `bin` of the crate in `dir` for `triple`, with `features`, embedding
/// `model` (the build script reads the blob's path from the environment variable it names, such as
/// `EMBER_DIGITS_MODEL`); `variant` names the copy.
pub struct Firmware<'a> {
    pub dir: &'a str,
    pub triple: &'a str,
    pub bin: &'a str,
    pub features: &'a [&'a str],
    pub model: Option<(&'a str, &'a Path)>,
    pub variant: &'a str,
}

impl Firmware<'_> {
    /// Builds the ELF in release mode, linted by clippy as it compiles (`-D warnings`, see
    /// `xtask/src/clippy.rs`: no second, check-mode build of the crate's dependencies), and returns the
    /// path of the ELF's copy.
    pub fn build(&self, root: &Path) -> Result<PathBuf> {
        let features = self.features.join(",");
        let feature_args: Vec<&str> = if features.is_empty() {
            vec![]
        } else {
            vec!["--features", features.as_str()]
        };
        let mut cmd = cargo(root, self.dir, self.model);
        cmd.args(["build", "--release", "--bin", self.bin])
            .args(&feature_args);
        run(crate::clippy::lint_while_building(&mut cmd)?)?;
        let built = cargo_target_dir(root)
            .join(self.triple)
            .join("release")
            .join(self.bin);
        let crate_name = Path::new(self.dir)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(self.dir);
        let copy = firmware_dir(root)
            .join("elf")
            .join(crate_name)
            .join(self.variant)
            .join(self.bin);
        fs::create_dir_all(copy.parent().context("an ELF path has a parent")?)?;
        fs::copy(&built, &copy)
            .with_context(|| format!("cannot copy {} to {}", built.display(), copy.display()))?;
        Ok(copy)
    }
}
