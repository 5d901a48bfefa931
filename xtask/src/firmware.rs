//! Firmware under QEMU: builds every QEMU firmware example in `firmware-examples/` (the digits CNN on
//! Cortex-M4F, Cortex-M7, Cortex-M3 and RV32IMAC; the DSP kernels' check; one keyword blob at three input
//! lengths), runs each on its emulated board, and checks every prediction against onnxruntime's on the
//! host.
//!
//! The boards are one table, [`BOARDS`]; a new QEMU example is a new row. QEMU is installed when missing:
//! `apt-get install qemu-system-arm` (or `qemu-system-misc` for RISC-V), or, where that can't install (see
//! `shared/TOOLCHAIN.md`), Debian's packages unpacked under `target/qemu/`.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

pub mod build;
mod common;
pub mod dsp_check;
pub(crate) mod install;
mod kws_lengths;
mod report;
use common::{run, run_qemu, tail, Board, HostResults, Qemu, QemuRun, Variant, ICOUNT_SHIFT};
use install::{find_or_install_qemu, qemu_version};
use report::{
    markdown_report, print_dsp_versus_reference, print_profile, print_summary, BoardResult,
    FlashCost, Report, Sections,
};

/// Every QEMU example `cargo xtask ci` builds, runs and checks. The commands match each crate's
/// `.cargo/config.toml` runner.
const BOARDS: &[Board] = &[
    Board::mps2("mps2-an386", "cortex-m4", "Cortex-M4F", DSP_CRATE),
    // The same ELF: the AN500 image has the AN386's memory map, with a Cortex-M7.
    Board::mps2(
        "mps2-an500",
        "cortex-m7",
        "Cortex-M7, running the mps2-an386 ELF",
        DSP_CRATE,
    ),
    Board {
        name: "lm3s6965evb",
        core: "Cortex-M3, 64 KiB RAM, soft float",
        dir: "firmware-examples/qemu-lm3s6965",
        target: "thumbv7m-none-eabi",
        qemu: Qemu::Arm,
        machine: "lm3s6965evb",
        cpu: Some("cortex-m3"),
        extra_args: &[],
        ram_bytes: 64 << 10,
    },
    Board {
        name: "riscv32-virt",
        core: "RV32IMAC, soft float",
        dir: "firmware-examples/qemu-riscv32-virt",
        target: "riscv32imac-unknown-none-elf",
        qemu: Qemu::Riscv32,
        machine: "virt",
        cpu: None,
        // No OpenSBI: the ELF starts in machine mode at 0x8000_0000.
        extra_args: &["-bios", "none"],
        ram_bytes: 16 << 20,
    },
];

/// The demo binary in every crate.
const FIRMWARE_BIN: &str = "digits";
/// The model and its golden data, relative to the repository root.
const DIGITS_DIR: &str = "tests/models/digits";

/// The crate that runs the int8 digits model on both ember-cortex-m's DSP kernels and the reference.
const DSP_CRATE: &str = "firmware-examples/qemu-mps2-an386";

/// Builds every QEMU firmware example, runs each board, and fails unless every run exits 0 within the
/// timeout and agrees with onnxruntime on every image it classified; prints per board accuracy,
/// agreement, arena use, the per-op profile, section sizes and QEMU's wall time, then a summary table.
pub fn qemu_check(root: &Path) -> Result<()> {
    let mut qemus = BTreeMap::new();
    for board in BOARDS {
        if let Entry::Vacant(e) = qemus.entry(board.qemu) {
            let path = find_or_install_qemu(root, board.qemu)?;
            eprintln!("qemu: {} ({})", path.display(), qemu_version(&path)?);
            e.insert(path);
        }
    }

    let mut targets: Vec<&str> = BOARDS.iter().map(|b| b.target).collect();
    targets.sort_unstable();
    targets.dedup();
    run(Command::new("rustup")
        .args(["target", "add"])
        .args(&targets)
        .current_dir(root))?;

    // Convert the models once: the f32 digits CNN, and the same network quantized to int8 by Ember
    // (post-training quantization on the 256 calibration images).
    let digits = root.join(DIGITS_DIR);
    let model = build::firmware_dir(root).join("digits.ember");
    let model_int8 = build::firmware_dir(root).join("digits_int8.ember");
    fs::create_dir_all(build::firmware_dir(root).join("logs"))?;
    // The host build (`cargo xtask ci` makes it first, or `cargo build -p ember-cli`) made `ember`.
    let ember = ember_binary(root);
    ensure!(
        ember.exists(),
        "{} is missing: build it first (cargo build -p ember-cli)",
        ember.display()
    );
    run(Command::new(&ember)
        .arg("convert")
        .arg(Path::new(DIGITS_DIR).join("model.onnx"))
        .arg("-o")
        .arg(&model)
        .current_dir(root))?;
    run(Command::new(&ember)
        .arg("convert")
        .arg(Path::new(DIGITS_DIR).join("model.onnx"))
        .arg("-o")
        .arg(&model_int8)
        .args(["--quantize", "int8", "--calibrate"])
        .arg(Path::new(DIGITS_DIR).join("calib.npy"))
        .current_dir(root))?;
    let variants = [
        Variant {
            name: "f32",
            model: model.clone(),
            features: &[],
            only: None,
            host: HostResults::load(&digits)?,
        },
        Variant {
            name: "int8",
            model: model_int8.clone(),
            features: &[],
            only: None,
            host: HostResults::ember(&digits, &model_int8)?,
        },
        // The same f32 firmware logging with defmt over semihosting, run and decoded by `ember qemu`.
        Variant {
            name: "f32-defmt",
            model: model.clone(),
            features: &["defmt"],
            only: Some(DSP_CRATE),
            host: HostResults::load(&digits)?,
        },
        Variant {
            name: "int8-ref",
            model: model_int8.clone(),
            features: &["reference-kernels"],
            only: Some(DSP_CRATE),
            host: HostResults::ember(&digits, &model_int8)?,
        },
    ];

    // Build (and lint) each crate once per variant, however many boards run its ELF.
    let mut built: BTreeMap<(&str, &str), PathBuf> = BTreeMap::new();
    let mut results = Vec::new();
    let mut failures = Vec::new();
    let mut runs = 0;
    for variant in &variants {
        for board in BOARDS {
            if variant.only.is_some_and(|dir| dir != board.dir) {
                continue;
            }
            runs += 1;
            let elf = match built.get(&(board.dir, variant.name)) {
                Some(elf) => elf.clone(),
                None => {
                    let elf = build_firmware(root, board, variant, FIRMWARE_BIN)?;
                    built.insert((board.dir, variant.name), elf.clone());
                    elf
                }
            };
            match run_board(root, board, variant, &qemus[&board.qemu], &elf) {
                Ok(result) => results.push(result),
                Err(e) => {
                    eprintln!("FAILED on {} ({}): {e:#}", board.name, variant.name);
                    failures.push(format!("{} ({}): {e:#}", board.name, variant.name));
                }
            }
        }
    }
    print_dsp_versus_reference(&results);
    let flash = match print_flash_cost(root, &qemus[&Qemu::Arm], &variants, &built) {
        Ok(flash) => flash,
        Err(e) => {
            eprintln!("FAILED: {e:#}");
            failures.push(format!("flash cost: {e:#}"));
            Vec::new()
        }
    };
    let report = build::firmware_dir(root).join("report.md");
    fs::write(&report, markdown_report(&results, &variants, &flash))
        .with_context(|| format!("cannot write {}", report.display()))?;

    // The DSP int8 kernels against the reference on the M4F and the M7 (`qemu-dsp-check`).
    if let Err(e) = dsp_check::check(root, &qemus[&Qemu::Arm]) {
        eprintln!("FAILED: {e:#}");
        failures.push(format!("qemu-dsp-check: {e:#}"));
    }

    // Shape variants: one keyword-spotting blob at three input lengths (`qemu-kws-lengths`).
    if let Err(e) = kws_lengths::check(root, &qemus[&Qemu::Arm], &ember) {
        eprintln!("FAILED: {e:#}");
        failures.push(format!("qemu-kws-lengths: {e:#}"));
    }

    print_summary(&results);
    if !failures.is_empty() {
        bail!(
            "{} of {runs} QEMU runs (and checks) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    eprintln!(
        "firmware check passed: {runs} runs on {} QEMU boards (f32 and int8 models)",
        BOARDS.len()
    );
    Ok(())
}

/// Builds binary `bin` of the board's crate in release mode with the variant's model and features (in the
/// shared firmware target directory, see [`build`]), and returns the ELF's path.
fn build_firmware(root: &Path, board: &Board, variant: &Variant, bin: &str) -> Result<PathBuf> {
    build::Firmware {
        dir: board.dir,
        triple: board.target,
        bin,
        features: variant.features,
        model: Some(("EMBER_DIGITS_MODEL", &variant.model)),
        variant: variant.name,
    }
    .build(root)
}

/// Runs the ELF on the board, checks its output against the host's, and prints what it measured.
fn run_board(
    root: &Path,
    board: &Board,
    variant: &Variant,
    qemu: &Path,
    elf: &Path,
) -> Result<BoardResult> {
    let host = &variant.host;
    // Output goes to a file: QEMU spins forever if a pipe's reader goes away.
    let log = build::firmware_dir(root).join("logs").join(format!(
        "{FIRMWARE_BIN}.{}.{}.qemu.log",
        board.name, variant.name
    ));
    let ember = (variant.name == "f32-defmt").then(|| ember_binary(root));
    let run = QemuRun::start(qemu, board, elf, &log, ember.as_deref(), "the firmware")?;
    let (text, wall) = (&run.text, run.wall);
    let fail = |why: String| run.fail(why);
    let report = Report::parse(text).map_err(|e| fail(format!("{e:#}")))?;

    let c = host.compare(&report).map_err(|e| fail(format!("{e:#}")))?;
    let n = c.images;

    eprintln!(
        "\nfirmware {FIRMWARE_BIN} ({} model) on QEMU {} ({}), `-icount shift={ICOUNT_SHIFT}`:",
        variant.name, board.name, board.core
    );
    eprintln!("  QEMU wall time   {:.2} s", wall.as_secs_f64());
    eprintln!(
        "  accuracy         {}/{n} = {:.2}% (host, {}: {}/{n})",
        c.correct,
        100.0 * c.correct as f64 / n as f64,
        host.source,
        c.host_correct
    );
    eprintln!(
        "  agreement        {}/{n} top-1 predictions equal those of {}",
        n - c.disagree.len(),
        host.source
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
    let sections = Sections::read(elf)?;
    sections.print();
    let static_ram = sections.data + sections.bss;
    if let Some(&peak) = report.stack.get("peak_bytes") {
        eprintln!(
            "  RAM              static {static_ram} + stack peak {peak} (arena included) = {} bytes, {:.1}% of the board's {} KiB",
            static_ram + peak,
            100.0 * (static_ram + peak) as f64 / board.ram_bytes as f64,
            board.ram_bytes >> 10
        );
    }
    print_profile(&report);

    c.agrees(host.source).map_err(|e| fail(format!("{e:#}")))?;
    eprintln!("  QEMU output in {}", log.display());
    Ok(BoardResult {
        name: board.name,
        variant: variant.name,
        ops: report.ops.clone(),
        inference: report.inference,
        images: n,
        agree: n - c.disagree.len(),
        correct: c.correct,
        arena_bytes: report.memory.get("arena_bytes").copied(),
        sections,
        wall,
    })
}

impl HostResults {
    fn load(digits: &Path) -> Result<Self> {
        let (shape, scores) = read_npy::<f32>(&digits.join("y.npy"))?;
        ensure!(
            shape.len() == 2 && shape[1] > 0,
            "y.npy: expected [N, classes], got {shape:?}"
        );
        let top1: Vec<usize> = scores.chunks_exact(shape[1]).map(top1).collect();
        let (_, labels) = read_npy::<i64>(&digits.join("labels.npy"))?;
        ensure!(
            top1.len() == labels.len(),
            "y.npy has {} rows but labels.npy {} labels",
            top1.len(),
            labels.len()
        );
        Ok(HostResults {
            source: "onnxruntime",
            top1,
            labels,
        })
    }

    /// Ember's own top-1 classes on the host for the blob at `model` (the int8 model, whose reference is
    /// the same blob run by `ember-core` on this machine), image by image as the firmware runs them.
    fn ember(digits: &Path, model: &Path) -> Result<Self> {
        let bytes = fs::read(model).with_context(|| format!("cannot read {}", model.display()))?;
        let blob = ember_core::AlignedBuf::from_bytes(&bytes);
        let parsed = ember_core::Model::parse(blob.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", model.display()))?;
        let mut arena = ember_core::AlignedBuf::zeroed(parsed.arena_bytes());
        let mut session = ember_core::Session::new(&parsed, arena.as_mut_bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", model.display()))?;
        let (shape, x) = read_npy::<f32>(&digits.join("x.npy"))?;
        let pixels: usize = shape.iter().skip(1).product();
        ensure!(pixels > 0, "x.npy: expected [N, ...], got {shape:?}");
        let mut top = Vec::new();
        for image in x.chunks_exact(pixels) {
            let scores = (|| {
                session.input(0)?.write_f32(image)?;
                session.run()?;
                Ok::<_, ember_core::Error>(session.output(0)?.as_f32()?.to_vec())
            })()
            .map_err(|e| anyhow::anyhow!("{} on the host: {e}", model.display()))?;
            top.push(top1(&scores));
        }
        let (_, labels) = read_npy::<i64>(&digits.join("labels.npy"))?;
        Ok(HostResults {
            source: "Ember on the host",
            top1: top,
            labels,
        })
    }
}

/// A firmware run's predictions against the host's, on the images the firmware carries (the first
/// `images` of the test set).
struct Comparison {
    images: usize,
    /// Images whose top-1 class differs from onnxruntime's.
    disagree: Vec<(usize, usize, usize)>,
    /// Images the firmware classified right.
    correct: usize,
    /// Of the same images, those onnxruntime classified right.
    host_correct: usize,
}

impl HostResults {
    /// Compares the firmware's predictions with onnxruntime's and the labels; fails if the firmware
    /// classified more images than the test set has, or if its own accuracy line does not add up.
    fn compare(&self, report: &Report) -> Result<Comparison> {
        let n = report.predictions.len();
        ensure!(
            n <= self.top1.len(),
            "the firmware classified {n} images, but y.npy has only {}",
            self.top1.len()
        );
        let ours = &report.predictions;
        let disagree = (0..n)
            .filter(|&i| ours[i] != self.top1[i])
            .map(|i| (i, ours[i], self.top1[i]))
            .collect();
        let right = |p: &[usize]| (0..n).filter(|&i| p[i] as i64 == self.labels[i]).count();
        let (correct, host_correct) = (right(ours), right(&self.top1));
        ensure!(
            report.accuracy == (correct, n),
            "the firmware reports accuracy {}/{}, but its predictions give {correct}/{n}",
            report.accuracy.0,
            report.accuracy.1
        );
        Ok(Comparison {
            images: n,
            disagree,
            correct,
            host_correct,
        })
    }
}

impl Comparison {
    /// Fails unless every top-1 prediction equals the host's (`source`), naming the first ten that differ.
    fn agrees(&self, source: &str) -> Result<()> {
        if self.disagree.is_empty() {
            return Ok(());
        }
        let shown: Vec<String> = self
            .disagree
            .iter()
            .take(10)
            .map(|(i, ours, host)| format!("image {i}: firmware {ours} vs host {host}"))
            .collect();
        bail!(
            "{} of {} firmware predictions differ from those of {source}: {}",
            self.disagree.len(),
            self.images,
            shown.join("; ")
        )
    }
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

/// Builds the mps2-an386 crate's `baseline` binary (the same board without Ember) and, for each variant,
/// its `classify` binary (inference only: the baseline's loop with Ember's inference), runs `classify`
/// under QEMU (its hit count must equal the host's), and prints what Ember adds to `.text`: in the
/// digits demo firmware, and in `classify`, which is the runtime's flash cost.
fn print_flash_cost(
    root: &Path,
    qemu: &Path,
    variants: &[Variant],
    built: &BTreeMap<(&str, &str), PathBuf>,
) -> Result<Vec<FlashCost>> {
    let mut costs = Vec::new();
    let board = BOARDS
        .iter()
        .find(|b| b.dir == DSP_CRATE)
        .context("no board builds the mps2-an386 crate")?;
    let baseline = build_firmware(root, board, &variants[0], "baseline")?;
    let base = Sections::read(&baseline)?.text;
    for v in variants {
        let Some(elf) = built.get(&(DSP_CRATE, v.name)) else {
            continue;
        };
        // `classify` logs as text whatever the features: a defmt build of it is the text one again.
        if v.features.contains(&"defmt") {
            continue;
        }
        let classify = build_firmware(root, board, v, "classify")?;
        check_classify(root, qemu, board, v, &classify)?;
        costs.push(FlashCost {
            variant: v.name,
            digits: Sections::read(elf)?.text,
            classify: Sections::read(&classify)?.text,
            baseline: base,
        });
    }
    eprintln!(
        "\nEmber's flash cost on {}: .text of a firmware minus that of the same board's `baseline` \
         firmware without Ember ({base} bytes); `classify` is inference only (the runtime: parse, session, \
         dispatch, the model's kernels), `digits` adds the demo's profile and reports; the model and images \
         are .rodata. The target for the runtime is under 16 KiB (16384 bytes).",
        board.name
    );
    eprintln!("  variant    classify (KiB)        digits (KiB)          runtime target");
    for c in &costs {
        let kib = |t: u64| t.saturating_sub(c.baseline) as f64 / 1024.0;
        eprintln!(
            "  {:<9} {:>7} B ({:>4.1})   {:>7} B ({:>4.1})   {}",
            c.variant,
            c.runtime(),
            kib(c.classify),
            c.digits.saturating_sub(c.baseline),
            kib(c.digits),
            c.against_target()
        );
    }
    Ok(costs)
}

/// Runs `classify` under QEMU and fails unless it exits 0 and its hit count equals the host's.
fn check_classify(
    root: &Path,
    qemu: &Path,
    board: &Board,
    variant: &Variant,
    elf: &Path,
) -> Result<()> {
    let log = build::firmware_dir(root)
        .join("logs")
        .join(format!("classify.{}.{}.qemu.log", board.name, variant.name));
    let (status, _) = run_qemu(qemu, board, elf, &log, None)?;
    let text =
        fs::read_to_string(&log).with_context(|| format!("cannot read {}", log.display()))?;
    ensure!(
        status == Some(0),
        "classify ({}) exited with {status:?}:\n{}",
        variant.name,
        tail(&text, 10)
    );
    let hits = text
        .lines()
        .find_map(|l| l.strip_prefix("classify "))
        .and_then(|l| l.split_whitespace().find_map(|kv| kv.strip_prefix("hits=")))
        .and_then(|h| h.parse::<usize>().ok())
        .with_context(|| format!("no `classify ... hits=N` line in {}", log.display()))?;
    let h = &variant.host;
    let host_hits = (0..h.top1.len().min(h.labels.len()))
        .filter(|&i| h.top1[i] as i64 == h.labels[i])
        .count();
    ensure!(
        hits == host_hits,
        "classify ({}) got {hits} images right, the host ({}) {host_hits}",
        variant.name,
        h.source
    );
    eprintln!(
        "classify ({}) on QEMU {}: {hits}/{} right, as on the host",
        variant.name,
        board.name,
        h.top1.len()
    );
    Ok(())
}

/// The `ember` binary of the host's debug build (`cargo build -p ember-cli`, or the test build of
/// `cargo xtask ci`).
pub(crate) fn ember_binary(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("debug")
        .join("ember")
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

#[cfg(test)]
mod tests;
