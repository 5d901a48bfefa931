//! Real-board firmware: built in CI, checked against the chip's memory map with `ember flash --dry-run`
//! (no probe needed), and an ELF linked for another board is shown to be rejected.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// A real board: its crate, the chip for the dry run, its target, and which ELF it must reject.
struct Board {
    dir: &'static str,
    chip: &'static str,
    triple: &'static str,
    /// `None`: the QEMU mps2-an386 ELF (flash at 0); `Some(i)`: board `i`'s ELF, for a chip whose flash
    /// is at 0 too.
    foreign: Option<usize>,
}

const BOARDS: &[Board] = &[
    Board {
        dir: "firmware-examples/stm32f411-blackpill",
        chip: "STM32F411RETx",
        triple: "thumbv7em-none-eabihf",
        foreign: None,
    },
    Board {
        dir: "firmware-examples/nrf52840-dk",
        chip: "nRF52840_xxAA",
        triple: "thumbv7em-none-eabihf",
        foreign: Some(0),
    },
    Board {
        dir: "firmware-examples/rp2040-pico",
        chip: "RP2040",
        triple: "thumbv6m-none-eabi",
        foreign: None,
    },
];

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

/// Builds every real-board example and dry-runs `ember flash` on it; each must also reject an ELF linked
/// for another memory map: an earlier board's, or `foreign_elf` (linked for QEMU's mps2-an386, flash at 0).
pub fn check(root: &Path, foreign_elf: &Path) -> Result<()> {
    // The `ember` the host build made (`cargo xtask ci` builds it before the firmware steps).
    let ember = crate::firmware::ember_binary(root);
    let model = crate::firmware::build::firmware_dir(root).join("digits.ember");
    ok(
        Command::new(&ember)
            .arg("convert")
            .arg(root.join("tests/models/digits/model.onnx"))
            .arg("-o")
            .arg(&model),
        "converting the digits model",
    )?;
    let mut elfs = Vec::new();
    for b in BOARDS {
        let (dir, chip) = (b.dir, b.chip);
        let elf = crate::firmware::build::Firmware {
            dir,
            triple: b.triple,
            bin: "digits",
            features: &[],
            model: Some(("EMBER_DIGITS_MODEL", &model)),
            variant: "f32",
        }
        .build(root)
        .with_context(|| format!("building {dir}"))?;
        elfs.push(elf.clone());
        let plan = ok(
            Command::new(&ember)
                .args(["flash", "--dry-run", "--chip", chip])
                .arg(&elf),
            &format!("ember flash --dry-run --chip {chip} on {dir}"),
        )?;
        eprintln!("{plan}");
        let foreign = match b.foreign {
            Some(i) => elfs[i].clone(),
            None => foreign_elf.to_path_buf(),
        };
        let out = Command::new(&ember)
            .args(["flash", "--dry-run", "--chip", chip])
            .arg(&foreign)
            .output()?;
        let text = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !text.contains("lies outside the flash") {
            bail!(
                "ember flash --dry-run --chip {chip} accepted {}, linked for another memory map: {text}",
                foreign.display()
            );
        }
        eprintln!("rejected as expected: {}", text.trim());
    }
    Ok(())
}
