//! `ember qemu`: clear errors for files it cannot run, and, where QEMU and the defmt build of the
//! `qemu-mps2-an386` firmware are present (`cargo xtask ci` builds it before the tests and sets
//! `EMBER_REQUIRE_QEMU=1`), a run whose defmt log is decoded into the demo's lines, checked against
//! onnxruntime's classes for the 360 test images.

mod common;

use std::path::{Path, PathBuf};

use common::{ember, ok_text, text};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn files_it_cannot_run_are_clear_errors() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let o = ember(&["qemu", dir.join("missing.elf").to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("cannot read"), "{}", text(&o));

    let not_elf = dir.join("not-an-elf.bin");
    std::fs::write(&not_elf, b"hello").unwrap();
    let o = ember(&["qemu", not_elf.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("is not an ELF file"), "{}", text(&o));

    // A host program (this very ember) is not firmware.
    let o = ember(&["qemu", env!("CARGO_BIN_EXE_ember")]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("runs Arm Cortex-M and RV32 ELFs"),
        "{}",
        text(&o)
    );
}

/// onnxruntime's class for each test image (`tests/models/digits/y.npy`).
fn onnxruntime_classes() -> Vec<usize> {
    let bytes = std::fs::read(repo().join("tests/models/digits/y.npy")).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let classes = *npy.shape().last().unwrap() as usize;
    let y: Vec<f32> = npy.into_vec().unwrap();
    y.chunks(classes)
        .map(|row| (0..classes).fold(0, |b, i| if row[i] > row[b] { i } else { b }))
        .collect()
}

#[test]
fn a_defmt_firmware_runs_and_its_log_is_decoded() {
    let elf = repo().join("target/firmware/elf/qemu-mps2-an386/f32-defmt/digits");
    let qemu_here = repo().join("target/qemu/usr/bin/qemu-system-arm").exists()
        || std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|d| d.join("qemu-system-arm").exists());
    if !elf.exists() || !qemu_here {
        assert_ne!(
            std::env::var("EMBER_REQUIRE_QEMU").as_deref(),
            Ok("1"),
            "EMBER_REQUIRE_QEMU=1 but QEMU or {} is missing (cargo xtask firmware builds it)",
            elf.display()
        );
        eprintln!(
            "skipping: QEMU or the defmt firmware is missing; run `cargo xtask firmware` first"
        );
        return;
    }
    let o = ember(&[
        "qemu",
        elf.to_str().unwrap(),
        "--machine",
        "mps2-an386",
        "--icount",
        "6",
        "--timeout",
        "60",
    ]);
    let out = ok_text(&o);
    assert!(out.contains("log defmt, decoded"), "{out}");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.iter().any(|l| l.starts_with("INFO  model ops=")),
        "{out}"
    );
    let want = onnxruntime_classes();
    let mut seen = 0;
    for l in &lines {
        if let Some(rest) = l.strip_prefix("INFO  pred ") {
            let mut it = rest.split_whitespace().map(|w| w.parse::<usize>().unwrap());
            let (i, class) = (it.next().unwrap(), it.next().unwrap());
            assert_eq!(class, want[i], "image {i}");
            seen += 1;
        }
    }
    assert_eq!(seen, want.len(), "{out}");
}
