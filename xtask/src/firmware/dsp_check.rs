//! `ember-cortex-m`'s DSP int8 kernels against the reference kernels on the emulated cores: builds
//! `firmware-examples/qemu-dsp-check`, runs it on `mps2-an386` (Cortex-M4F) and `mps2-an500` (Cortex-M7),
//! fails on any output byte that differs (or a timeout, fault or bad exit), and prints each kernel's
//! cost on both tables in SysTick ticks and the instructions they imply under `-icount`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use super::install::find_or_install_qemu;
use super::{run, Board, Qemu, QemuRun, ICOUNT_SHIFT};

/// The check's crate, relative to the repository root, and its binary.
const DIR: &str = "firmware-examples/qemu-dsp-check";
const BIN: &str = "dsp_check";
const TARGET: &str = "thumbv7em-none-eabihf";

/// The machines that run the one ELF.
const MACHINES: &[Board] = &[
    Board::mps2("mps2-an386", "cortex-m4", "Cortex-M4F", DIR),
    Board::mps2("mps2-an500", "cortex-m7", "Cortex-M7", DIR),
];

/// One `kernel` line: cases, mismatching cases, and the ticks each table took over all cases.
#[derive(Debug, PartialEq)]
struct KernelFigures {
    name: String,
    cases: u64,
    mismatches: u64,
    ref_ticks: u64,
    dsp_ticks: u64,
}

/// What the check printed.
#[derive(Debug)]
struct DspReport {
    kernels_name: String,
    primitive_mismatches: u64,
    kernels: Vec<KernelFigures>,
    cases: u64,
    mismatches: u64,
    ticks_per_second: u64,
}

impl DspReport {
    fn parse(text: &str) -> Result<Self> {
        let mut kernels_name = None;
        let mut primitives = None;
        let mut summary = None;
        let mut kernels = Vec::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let bad = || anyhow::anyhow!("cannot read the check's line `{line}`");
            let fields = |words: &[&str]| super::report::key_values(words).ok_or_else(bad);
            match words.as_slice() {
                ["dsp-check", rest @ ..] => {
                    kernels_name = rest
                        .iter()
                        .find_map(|w| w.strip_prefix("kernels="))
                        .map(str::to_string);
                }
                ["primitives", rest @ ..] => primitives = Some(fields(rest)?),
                ["summary", rest @ ..] => summary = Some(fields(rest)?),
                ["kernel", name, rest @ ..] => {
                    let kv = fields(rest)?;
                    let get = |k: &str| kv.get(k).copied().ok_or_else(bad);
                    kernels.push(KernelFigures {
                        name: name.to_string(),
                        cases: get("cases")?,
                        mismatches: get("mismatches")?,
                        ref_ticks: get("ref_ticks")?,
                        dsp_ticks: get("dsp_ticks")?,
                    });
                }
                _ => {}
            }
        }
        let primitives = primitives.context("the check printed no `primitives` line")?;
        let summary = summary.context("the check printed no `summary` line")?;
        let get = |kv: &BTreeMap<String, u64>, k: &str| {
            kv.get(k)
                .copied()
                .with_context(|| format!("no `{k}` in the check's output"))
        };
        ensure!(!kernels.is_empty(), "the check printed no `kernel` lines");
        Ok(DspReport {
            kernels_name: kernels_name.context("the check printed no `dsp-check` line")?,
            primitive_mismatches: get(&primitives, "mismatches")?,
            kernels,
            cases: get(&summary, "cases")?,
            mismatches: get(&summary, "mismatches")?,
            ticks_per_second: get(&summary, "ticks_per_second")?,
        })
    }

    /// Fails on any mismatch, or when the kernels under test are not the DSP ones.
    fn passes(&self) -> Result<()> {
        ensure!(
            self.kernels_name == "cortex-m-dsp",
            "the firmware ran the `{}` table, not `cortex-m-dsp`",
            self.kernels_name
        );
        ensure!(
            self.primitive_mismatches == 0,
            "{} DSP instructions differ from their emulation",
            self.primitive_mismatches
        );
        let bad: Vec<String> = self
            .kernels
            .iter()
            .filter(|k| k.mismatches > 0)
            .map(|k| format!("{} {}/{}", k.name, k.mismatches, k.cases))
            .collect();
        ensure!(
            self.mismatches == 0 && bad.is_empty(),
            "DSP kernel outputs differ from the reference's: {}",
            bad.join(", ")
        );
        Ok(())
    }

    /// Per kernel: cases, mismatches, both tables' ticks and implied instructions, and the ratio.
    fn print(&self, board: &Board) {
        // With -icount shift=N an instruction takes 2^N ns, so a tick is 1e9 / (tps * 2^N) instructions.
        let insns = |t: u64| {
            t as f64 * 1e9 / (self.ticks_per_second as f64 * f64::from(1u32 << ICOUNT_SHIFT))
        };
        eprintln!(
            "\nDSP kernels vs reference on QEMU {} ({}), `-icount shift={ICOUNT_SHIFT}`: {} cases, {} mismatches",
            board.name, board.core, self.cases, self.mismatches
        );
        eprintln!(
            "  {:<22} {:>6} {:>10} {:>14} {:>14} {:>8}",
            "kernel", "cases", "mismatches", "ref ~insns", "dsp ~insns", "ref/dsp"
        );
        for k in &self.kernels {
            eprintln!(
                "  {:<22} {:>6} {:>10} {:>14.0} {:>14.0} {:>7.2}x",
                k.name,
                k.cases,
                k.mismatches,
                insns(k.ref_ticks),
                insns(k.dsp_ticks),
                k.ref_ticks as f64 / k.dsp_ticks.max(1) as f64
            );
        }
    }
}

/// Builds the check (and lints it), runs it on each machine, and fails unless every run exits 0 with
/// no mismatch.
pub(super) fn check(root: &Path, qemu: &Path) -> Result<()> {
    lint_for_cores(root)?;
    let elf = build(root)?;
    let mut failures = Vec::new();
    for board in MACHINES {
        if let Err(e) = run_on(root, board, qemu, &elf) {
            eprintln!("FAILED: DSP kernel check on {}: {e:#}", board.name);
            failures.push(format!("{}: {e:#}", board.name));
        }
    }
    if !failures.is_empty() {
        bail!("the DSP kernel check failed:\n{}", failures.join("\n"));
    }
    eprintln!(
        "DSP kernels give the reference's bytes on {} QEMU machines",
        MACHINES.len()
    );
    Ok(())
}

/// Arm targets `ember-cortex-m` must build (and lint) for: with DSP (`asm!`) and without (the
/// reference fallback).
const CORE_TARGETS: &[&str] = &[
    "thumbv7em-none-eabihf",
    "thumbv7m-none-eabi",
    "thumbv6m-none-eabi",
];

/// `cargo clippy -p ember-cortex-m` for each of [`CORE_TARGETS`], so that the `asm!` path and the
/// fallback both stay clean.
fn lint_for_cores(root: &Path) -> Result<()> {
    run(Command::new("rustup")
        .args(["target", "add"])
        .args(CORE_TARGETS)
        .current_dir(root))?;
    // One command for the three, so that cargo checks them side by side.
    let mut cmd = Command::new("cargo");
    cmd.args(["clippy", "-p", "ember-cortex-m"]);
    for target in CORE_TARGETS {
        cmd.args(["--target", target]);
    }
    run(cmd.args(["--", "-D", "warnings"]).current_dir(root))
}

/// `cargo xtask dsp-check`: the check alone, installing QEMU first if needed.
pub fn check_alone(root: &Path) -> Result<()> {
    let qemu = find_or_install_qemu(root, Qemu::Arm)?;
    check(root, &qemu)
}

fn build(root: &Path) -> Result<PathBuf> {
    super::build::Firmware {
        dir: DIR,
        triple: TARGET,
        bin: BIN,
        features: &[],
        model: None,
        variant: "check",
    }
    .build(root)
}

fn run_on(root: &Path, board: &Board, qemu: &Path, elf: &Path) -> Result<()> {
    let log = super::build::firmware_dir(root)
        .join("logs")
        .join(format!("{BIN}.{}.qemu.log", board.name));
    let run = QemuRun::start(qemu, board, elf, &log, None, "the check")?;
    let (text, wall) = (&run.text, run.wall);
    let fail = |why: String| run.fail(why);
    let report = DspReport::parse(text).map_err(|e| fail(format!("{e:#}")))?;
    report.print(board);
    eprintln!(
        "  QEMU wall time {:.2} s, output in {}",
        wall.as_secs_f64(),
        log.display()
    );
    report.passes().map_err(|e| fail(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "dsp-check kernels=cortex-m-dsp dsp=true
accelerated quant_conv2d quant_fully_connected
primitives words=4096 mismatches=0
kernel conv cases=150 mismatches=0 ref_ticks=2000 dsp_ticks=1000
kernel fully_connected cases=75 mismatches=0 ref_ticks=300 dsp_ticks=200
summary cases=225 mismatches=0 invalid=0 ticks_per_second=25000000
";

    #[test]
    fn a_clean_run_passes() {
        let r = DspReport::parse(OUTPUT).unwrap();
        assert_eq!(r.kernels.len(), 2);
        assert_eq!(r.kernels[0].ref_ticks, 2000);
        assert_eq!(r.cases, 225);
        r.passes().unwrap();
    }

    #[test]
    fn a_mismatch_fails() {
        let text = OUTPUT
            .replace(
                "kernel conv cases=150 mismatches=0",
                "kernel conv cases=150 mismatches=3",
            )
            .replace(
                "summary cases=225 mismatches=0",
                "summary cases=225 mismatches=3",
            );
        let err = DspReport::parse(&text).unwrap().passes().unwrap_err();
        assert!(format!("{err}").contains("conv 3/150"), "{err}");
    }

    #[test]
    fn a_missing_summary_fails() {
        let text = OUTPUT.replace("summary", "summry");
        assert!(DspReport::parse(&text).is_err());
    }
}
