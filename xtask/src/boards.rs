//! Real-board firmware: built in CI, checked against the chip's memory map with `ember flash --dry-run`
//! (no probe needed), and an ELF linked for another board is shown to be rejected.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// `(crate folder, chip for the dry run)`.
const BOARDS: &[(&str, &str)] = &[("firmware-examples/stm32f411-blackpill", "STM32F411RETx")];

fn ok(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        bail!("{what} failed:\n{text}");
    }
    Ok(text)
}

/// Builds every real-board example and dry-runs `ember flash` on it; `foreign_elf` (linked for QEMU's
/// mps2-an386, flash at 0) must be rejected by the same chip.
pub fn check(root: &Path, foreign_elf: &Path) -> Result<()> {
    ok(
        Command::new("cargo")
            .args(["build", "--quiet", "-p", "ember-cli"])
            .current_dir(root),
        "building ember",
    )?;
    let ember = root.join("target/debug/ember");
    for (dir, chip) in BOARDS {
        let board = root.join(dir);
        let model = board.join("target/digits.ember");
        std::fs::create_dir_all(board.join("target"))?;
        ok(
            Command::new(&ember)
                .arg("convert")
                .arg(root.join("tests/models/digits/model.onnx"))
                .arg("-o")
                .arg(&model),
            "converting the digits model",
        )?;
        ok(
            Command::new("cargo")
                .args(["build", "--release", "--quiet"])
                .current_dir(&board)
                .env("EMBER_DIGITS_MODEL", &model)
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .env_remove("CARGO_BUILD_TARGET"),
            &format!("building {dir}"),
        )?;
        ok(
            Command::new("cargo")
                .args(["clippy", "--release", "--quiet", "--", "-D", "warnings"])
                .current_dir(&board)
                .env("EMBER_DIGITS_MODEL", &model)
                .env_remove("RUSTFLAGS"),
            &format!("clippy on {dir}"),
        )?;
        let elf = board.join("target/thumbv7em-none-eabihf/release/digits");
        let plan = ok(
            Command::new(&ember)
                .args(["flash", "--dry-run", "--chip", chip])
                .arg(&elf),
            &format!("ember flash --dry-run --chip {chip} on {dir}"),
        )?;
        eprintln!("{plan}");
        let out = Command::new(&ember)
            .args(["flash", "--dry-run", "--chip", chip])
            .arg(foreign_elf)
            .output()?;
        let text = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !text.contains("lies outside the flash") {
            bail!(
                "ember flash --dry-run --chip {chip} accepted {} (linked for mps2-an386): {text}",
                foreign_elf.display()
            );
        }
        eprintln!("rejected as expected: {}", text.trim());
    }
    Ok(())
}
