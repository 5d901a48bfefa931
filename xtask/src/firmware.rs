//! Firmware under QEMU: builds `firmware-examples/qemu-mps2-an386` (the digits CNN on a Cortex-M4F), runs
//! it on QEMU's `mps2-an386` board, and checks every prediction against onnxruntime's on the host.
//!
//! QEMU is installed when missing: `apt-get install qemu-system-arm`, or, where that can't install (see
//! `shared/TOOLCHAIN.md`), Debian's packages unpacked under `target/qemu/`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use object::{Object, ObjectSection};

/// The firmware crate, relative to the repository root.
const FIRMWARE_DIR: &str = "firmware-examples/qemu-mps2-an386";
/// Its target triple (Cortex-M4F, hard float).
const FIRMWARE_TARGET: &str = "thumbv7em-none-eabihf";
/// The demo binary.
const FIRMWARE_BIN: &str = "digits";
/// The model and its golden data, relative to the repository root.
const DIGITS_DIR: &str = "tests/models/digits";
/// A run takes about a second; a fault or a lost exit would otherwise hang QEMU forever.
const QEMU_TIMEOUT: Duration = Duration::from_secs(60);
/// `-icount shift=N`: one instruction every 2^N ns of virtual time, so that the firmware's SysTick
/// profile depends on the instructions executed only, and repeats exactly from run to run.
const ICOUNT_SHIFT: u32 = 6;
/// Debian packages that hold `qemu-system-arm`, for the unpack-under-`target/` fallback.
const QEMU_DEBS: &[&str] = &["qemu-system-arm", "qemu-system-common", "qemu-system-data"];
/// Shared libraries the unpacked `qemu-system-arm` 7.2 needs (Debian 12 package names).
const QEMU_LIBS: &[&str] = &[
    "libfdt1",
    "libcapstone4",
    "libpmem1",
    "librdmacm1",
    "libibverbs1",
    "libslirp0",
    "libvdeplug2",
];

/// Builds the QEMU firmware, runs it, and fails unless it exits 0 and agrees with onnxruntime on every
/// image; prints accuracy, agreement, arena use, the per-op profile, section sizes and QEMU's wall time.
pub fn qemu_check(root: &Path) -> Result<()> {
    let firmware = root.join(FIRMWARE_DIR);
    let target_dir = firmware.join("target");
    fs::create_dir_all(&target_dir)
        .with_context(|| format!("cannot create {}", target_dir.display()))?;

    let qemu = find_or_install_qemu(root)?;
    eprintln!("qemu: {} ({})", qemu.display(), qemu_version(&qemu)?);

    run(Command::new("rustup")
        .args(["target", "add", FIRMWARE_TARGET])
        .current_dir(root))?;

    let model = target_dir.join("digits.ember");
    run(Command::new("cargo")
        .args(["run", "--quiet", "-p", "ember-cli", "--", "convert"])
        .arg(Path::new(DIGITS_DIR).join("model.onnx"))
        .arg("-o")
        .arg(&model)
        .current_dir(root))?;

    // The firmware's own `.cargo/config.toml` sets the target and the linker script; a RUSTFLAGS from the
    // environment would replace its rustflags (and drop `-Tlink.x`), so it is cleared here.
    let firmware_cargo = |args: &[&str]| {
        let mut cmd = Command::new("cargo");
        cmd.args(args)
            .current_dir(&firmware)
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("EMBER_DIGITS_MODEL", &model)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET");
        cmd
    };
    run(&mut firmware_cargo(&[
        "build",
        "--release",
        "--bin",
        FIRMWARE_BIN,
    ]))?;
    run(&mut firmware_cargo(&[
        "clippy",
        "--release",
        "--bin",
        FIRMWARE_BIN,
        "--",
        "-D",
        "warnings",
    ]))?;
    let elf = target_dir
        .join(FIRMWARE_TARGET)
        .join("release")
        .join(FIRMWARE_BIN);

    // Run it, with the output going to a file (QEMU spins forever if a pipe's reader goes away).
    let log = target_dir.join("digits.qemu.log");
    let (status, wall) = run_qemu(&qemu, &elf, &log)?;
    let text =
        fs::read_to_string(&log).with_context(|| format!("cannot read {}", log.display()))?;
    let fail = |why: String| -> anyhow::Error {
        anyhow::anyhow!(
            "{why}\n--- last lines of {} ---\n{}",
            log.display(),
            tail(&text, 20)
        )
    };
    match status {
        None => return Err(fail(format!("QEMU did not finish within {QEMU_TIMEOUT:?}"))),
        Some(0) => {}
        Some(code) => return Err(fail(format!("the firmware exited with status {code}"))),
    }
    let report = Report::parse(&text).map_err(|e| fail(format!("{e:#}")))?;

    // Compare with onnxruntime's outputs and the labels.
    let digits = root.join(DIGITS_DIR);
    let (shape, scores) = read_npy::<f32>(&digits.join("y.npy"))?;
    ensure!(
        shape.len() == 2 && shape[1] > 0,
        "y.npy: expected [N, classes], got {shape:?}"
    );
    let host: Vec<usize> = scores.chunks_exact(shape[1]).map(top1).collect();
    let (_, labels) = read_npy::<i64>(&digits.join("labels.npy"))?;
    let n = report.predictions.len();
    ensure!(
        n == host.len() && n == labels.len(),
        "the firmware classified {n} images, but y.npy has {} and labels.npy {}",
        host.len(),
        labels.len()
    );
    let disagree: Vec<usize> = (0..n)
        .filter(|&i| report.predictions[i] != host[i])
        .collect();
    let correct = (0..n)
        .filter(|&i| report.predictions[i] as i64 == labels[i])
        .count();
    let host_correct = (0..n).filter(|&i| host[i] as i64 == labels[i]).count();
    ensure!(
        report.accuracy == (correct, n),
        "the firmware reports accuracy {}/{}, but its predictions give {correct}/{n}",
        report.accuracy.0,
        report.accuracy.1
    );

    eprintln!("\nfirmware {FIRMWARE_BIN} on QEMU mps2-an386 (Cortex-M4F), `-icount shift={ICOUNT_SHIFT}`:");
    eprintln!("  QEMU wall time   {:.2} s", wall.as_secs_f64());
    eprintln!(
        "  accuracy         {correct}/{n} = {:.2}% (onnxruntime on the host: {host_correct}/{n})",
        100.0 * correct as f64 / n as f64
    );
    eprintln!(
        "  agreement        {}/{n} top-1 predictions equal onnxruntime's",
        n - disagree.len()
    );
    for key in [
        "arena_bytes",
        "used_bytes",
        "persistent_bytes",
        "planned_bytes",
        "lower_bound_bytes",
        "peak_bytes",
        "scratch_bytes",
    ] {
        if let Some(v) = report.memory.get(key) {
            eprintln!("  arena {key:<18} {v:>8}");
        }
    }
    print_sections(&elf)?;
    print_profile(&report);

    if !disagree.is_empty() {
        let shown: Vec<String> = disagree
            .iter()
            .take(10)
            .map(|&i| {
                format!(
                    "image {i}: firmware {} vs onnxruntime {}",
                    report.predictions[i], host[i]
                )
            })
            .collect();
        bail!(
            "{} of {n} firmware predictions differ from onnxruntime's: {}",
            disagree.len(),
            shown.join("; ")
        );
    }
    eprintln!("firmware check passed: QEMU output in {}", log.display());
    Ok(())
}

/// What the firmware printed (see the `//!` block of `src/bin/digits.rs` for the line format).
struct Report {
    predictions: Vec<usize>,
    accuracy: (usize, usize),
    memory: BTreeMap<String, u64>,
    /// (op index, op name, ticks) for the first image.
    ops: Vec<(usize, String, u64)>,
    /// (images, ticks, ticks per second) for classifying every image.
    inference: Option<(u64, u64, u64)>,
}

impl Report {
    fn parse(text: &str) -> Result<Self> {
        let mut predictions: Vec<Option<usize>> = Vec::new();
        let mut report = Report {
            predictions: Vec::new(),
            accuracy: (0, 0),
            memory: BTreeMap::new(),
            ops: Vec::new(),
            inference: None,
        };
        let mut accuracy = None;
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let bad = || anyhow::anyhow!("cannot read the firmware's line `{line}`");
            match words.as_slice() {
                ["pred", index, class] => {
                    let index: usize = index.parse().map_err(|_| bad())?;
                    if predictions.len() <= index {
                        predictions.resize(index + 1, None);
                    }
                    predictions[index] = Some(class.parse().map_err(|_| bad())?);
                }
                ["accuracy", ratio] => {
                    let (a, b) = ratio.split_once('/').ok_or_else(bad)?;
                    accuracy = Some((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?));
                }
                ["memory", fields @ ..] => report.memory = key_values(fields).ok_or_else(bad)?,
                ["op", index, name, ticks] => {
                    let ticks = ticks.strip_prefix("ticks=").ok_or_else(bad)?;
                    report.ops.push((
                        index.parse().map_err(|_| bad())?,
                        name.to_string(),
                        ticks.parse().map_err(|_| bad())?,
                    ));
                }
                ["inference", fields @ ..] => {
                    let kv = key_values(fields).ok_or_else(bad)?;
                    let get = |k: &str| kv.get(k).copied().ok_or_else(bad);
                    report.inference =
                        Some((get("images")?, get("ticks")?, get("ticks_per_second")?));
                }
                _ => {}
            }
        }
        report.accuracy = accuracy.context("the firmware printed no `accuracy` line")?;
        ensure!(
            !predictions.is_empty(),
            "the firmware printed no `pred` lines"
        );
        report.predictions = predictions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                p.with_context(|| format!("the firmware printed no prediction for image {i}"))
            })
            .collect::<Result<_>>()?;
        Ok(report)
    }
}

/// Parses `key=value` words with integer values.
fn key_values(words: &[&str]) -> Option<BTreeMap<String, u64>> {
    words
        .iter()
        .map(|w| {
            let (k, v) = w.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Index of the largest score, the first one on a tie (as the firmware does).
fn top1(scores: &[f32]) -> usize {
    let mut best = 0;
    for (i, &s) in scores.iter().enumerate() {
        if s > scores[best] {
            best = i;
        }
    }
    best
}

/// Prints the per-op SysTick profile of the first image, with the instruction count it implies.
fn print_profile(report: &Report) {
    let Some((images, ticks, tps)) = report.inference else {
        return;
    };
    // With -icount shift=N an instruction takes 2^N ns, so a tick is 1e9 / (tps * 2^N) instructions.
    let insns = |t: u64| t as f64 * 1e9 / (tps as f64 * f64::from(1u32 << ICOUNT_SHIFT));
    eprintln!(
        "  inference        {images} images in {ticks} SysTick ticks at {tps} Hz: {:.0} ticks, ~{:.0} instructions per image",
        ticks as f64 / images as f64,
        insns(ticks) / images as f64
    );
    eprintln!("  profile of image 0 (ticks, ~instructions):");
    for (index, name, t) in &report.ops {
        eprintln!("    {index:>3} {name:<16} {t:>9} {:>9.0}", insns(*t));
    }
}

/// Prints the ELF's section sizes and what they take of flash and RAM.
fn print_sections(elf: &Path) -> Result<()> {
    let bytes = fs::read(elf).with_context(|| format!("cannot read {}", elf.display()))?;
    let file = object::File::parse(&*bytes)
        .with_context(|| format!("{} is not an ELF file", elf.display()))?;
    let size = |name: &str| file.section_by_name(name).map_or(0, |s| s.size());
    let (vectors, text, rodata, data, bss) = (
        size(".vector_table"),
        size(".text"),
        size(".rodata"),
        size(".data"),
        size(".bss"),
    );
    eprintln!(
        "  sections         .vector_table {vectors}  .text {text}  .rodata {rodata}  .data {data}  .bss {bss} bytes"
    );
    eprintln!(
        "  flash {} bytes (vectors + .text + .rodata + .data), static RAM {} bytes (.data + .bss; the arena is on the stack)",
        vectors + text + rodata + data,
        data + bss
    );
    Ok(())
}

/// Runs the firmware under QEMU with its output in `log`; returns the exit code (`None` on timeout) and
/// the wall time.
fn run_qemu(qemu: &Path, elf: &Path, log: &Path) -> Result<(Option<i32>, Duration)> {
    let out = fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = Command::new(qemu);
    cmd.args(["-M", "mps2-an386", "-cpu", "cortex-m4", "-nographic"])
        .args(["-semihosting-config", "enable=on,target=native"])
        .args(["-icount", &format!("shift={ICOUNT_SHIFT}")])
        .arg("-kernel")
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    eprintln!("$ {cmd:?} > {}", log.display());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", qemu.display()))?;
    loop {
        if let Some(status) = child.try_wait()? {
            // A signal (no code) counts as a failure.
            return Ok((Some(status.code().unwrap_or(-1)), start.elapsed()));
        }
        if start.elapsed() > QEMU_TIMEOUT {
            child.kill()?;
            child.wait()?;
            return Ok((None, start.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `qemu-system-arm` from PATH, or from `target/qemu/`, or installed now.
fn find_or_install_qemu(root: &Path) -> Result<PathBuf> {
    let unpacked_dir = root.join("target").join("qemu");
    let unpacked = unpacked_dir.join("usr/bin/qemu-system-arm");
    for candidate in [PathBuf::from("qemu-system-arm"), unpacked.clone()] {
        if qemu_version(&candidate).is_ok() {
            return Ok(candidate);
        }
    }

    eprintln!("qemu-system-arm not found: installing it");
    // `--no-remove`: never make room by removing a system package (on the image TOOLCHAIN.md describes,
    // apt would remove a newer qemu-utils from backports to install Debian's QEMU 7.2).
    if apt_get(&[
        "install",
        "-y",
        "--no-install-recommends",
        "--no-remove",
        "qemu-system-arm",
    ])
    .is_ok()
        && qemu_version(Path::new("qemu-system-arm")).is_ok()
    {
        return Ok(PathBuf::from("qemu-system-arm"));
    }

    // Fallback: unpack Debian's packages under target/qemu (works where the package can't be installed
    // because of conflicting system packages, e.g. a newer qemu-utils from backports).
    eprintln!(
        "apt-get install failed; unpacking the QEMU packages into {}",
        unpacked_dir.display()
    );
    let debs = unpacked_dir.join("debs");
    fs::create_dir_all(&debs)?;
    let mut download = vec!["download"];
    download.extend_from_slice(QEMU_DEBS);
    apt_get_in(&download, &debs)?;
    let mut libs = vec!["install", "-y", "--no-install-recommends", "--no-remove"];
    libs.extend_from_slice(QEMU_LIBS);
    apt_get(&libs)?;
    for entry in fs::read_dir(&debs)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "deb") {
            run(Command::new("dpkg").arg("-x").arg(&path).arg(&unpacked_dir))?;
        }
    }
    if let Err(e) = qemu_version(&unpacked) {
        let missing = Command::new("ldd").arg(&unpacked).output().map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains("not found"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(", ")
        });
        bail!(
            "the unpacked {} does not run ({e:#}); missing libraries: {}",
            unpacked.display(),
            missing.unwrap_or_default()
        );
    }
    Ok(unpacked)
}

/// The first line of `qemu --version`.
fn qemu_version(qemu: &Path) -> Result<String> {
    let out = Command::new(qemu)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", qemu.display()))?;
    ensure!(
        out.status.success(),
        "{} --version failed: {}",
        qemu.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}

fn apt_get(args: &[&str]) -> Result<()> {
    apt_get_in(args, Path::new("."))
}

/// Runs `apt-get` (through `sudo -n` when not root); on failure runs `apt-get update` once and retries.
fn apt_get_in(args: &[&str], dir: &Path) -> Result<()> {
    let attempt = |args: &[&str]| {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0"));
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.args(["-n", "apt-get"]);
            sudo
        };
        cmd.args(args)
            .current_dir(dir)
            .env("DEBIAN_FRONTEND", "noninteractive");
        run(&mut cmd)
    };
    if attempt(args).is_ok() {
        return Ok(());
    }
    eprintln!("retrying after `apt-get update`");
    attempt(&["update"])?;
    attempt(args)
}

/// Runs `cmd`, echoing it; fails if it exits non-zero.
fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    ensure!(status.success(), "{cmd:?} failed ({status})");
    Ok(())
}

/// Reads a C-order `.npy` file as a flat vector of `T`, with its shape.
fn read_npy<T: npyz::Deserialize>(path: &Path) -> Result<(Vec<usize>, Vec<T>)> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let npy = npyz::NpyFile::new(&bytes[..])
        .with_context(|| format!("{} is not a valid .npy file", path.display()))?;
    ensure!(
        npy.order() == npyz::Order::C,
        "{} is not in C order",
        path.display()
    );
    let shape = npy.shape().iter().map(|&d| d as usize).collect();
    let data = npy
        .into_vec()
        .with_context(|| format!("{} does not hold the expected dtype", path.display()))?;
    Ok((shape, data))
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
