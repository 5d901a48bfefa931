//! What a firmware run printed (`Report`), the ELF's section sizes (`Sections`), and the figures the
//! firmware check prints and writes for `cargo xtask bench`.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use object::{Object, ObjectSection, SectionKind};

use super::common::{Variant, ICOUNT_SHIFT};

/// One board's run, as the summary prints it.
pub(crate) struct BoardResult {
    pub(crate) name: &'static str,
    pub(crate) variant: &'static str,
    /// (op index, op name, ticks) of image 0, and (images, ticks, ticks per second) for all of them.
    pub(crate) ops: Vec<(usize, String, u64)>,
    pub(crate) inference: Option<(u64, u64, u64)>,
    pub(crate) images: usize,
    pub(crate) agree: usize,
    pub(crate) correct: usize,
    pub(crate) arena_bytes: Option<u64>,
    pub(crate) sections: Sections,
    pub(crate) wall: Duration,
}

/// One line per board: the figures CI compares across boards at a glance.
pub(super) fn print_summary(results: &[BoardResult]) {
    eprintln!("\nQEMU firmware summary (digits CNN; agreement with onnxruntime for f32, with Ember on the host for int8):");
    eprintln!(
        "  {:<13} {:<8} {:>9} {:>9} {:>6} {:>7} {:>8} {:>6} {:>6} {:>7}",
        "board",
        "model",
        "agree",
        "accuracy",
        "arena",
        ".text",
        ".rodata",
        ".data",
        ".bss",
        "wall s"
    );
    for r in results {
        eprintln!(
            "  {:<13} {:<8} {:>9} {:>9} {:>6} {:>7} {:>8} {:>6} {:>6} {:>7.2}",
            r.name,
            r.variant,
            format!("{}/{}", r.agree, r.images),
            format!("{}/{}", r.correct, r.images),
            r.arena_bytes.map_or("?".to_string(), |a| a.to_string()),
            r.sections.text,
            r.sections.rodata,
            r.sections.data,
            r.sections.bss,
            r.wall.as_secs_f64()
        );
    }
}

/// What the firmware printed (see the `//!` block of `src/bin/digits.rs` for the line format).
pub(super) struct Report {
    pub(super) predictions: Vec<usize>,
    pub(super) accuracy: (usize, usize),
    pub(super) memory: BTreeMap<String, u64>,
    /// `stack peak_bytes=.. size_bytes=..`, from the firmware examples that measure their stack.
    pub(super) stack: BTreeMap<String, u64>,
    /// (op index, op name, ticks) for the first image.
    pub(super) ops: Vec<(usize, String, u64)>,
    /// (images, ticks, ticks per second) for classifying every image.
    pub(super) inference: Option<(u64, u64, u64)>,
}

impl Report {
    pub(super) fn parse(text: &str) -> Result<Self> {
        let mut predictions: Vec<Option<usize>> = Vec::new();
        let mut report = Report {
            predictions: Vec::new(),
            accuracy: (0, 0),
            memory: BTreeMap::new(),
            stack: BTreeMap::new(),
            ops: Vec::new(),
            inference: None,
        };
        let mut accuracy = None;
        for line in text.lines() {
            // `ember qemu` prints a decoded defmt line with its level first.
            let line = line.strip_prefix("INFO ").map_or(line, str::trim_start);
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
                ["stack", fields @ ..] => report.stack = key_values(fields).ok_or_else(bad)?,
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
pub(super) fn key_values(words: &[&str]) -> Option<BTreeMap<String, u64>> {
    words
        .iter()
        .map(|w| {
            let (k, v) = w.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// ember-cortex-m's DSP kernels against the reference on the int8 digits model, per op and per inference,
/// on each board that ran both (instructions under `-icount`).
pub(super) fn print_dsp_versus_reference(results: &[BoardResult]) {
    for dsp in results.iter().filter(|r| r.variant == "int8") {
        let Some(reference) = results
            .iter()
            .find(|r| r.variant == "int8-ref" && r.name == dsp.name)
        else {
            continue;
        };
        let (Some((n, dsp_ticks, _)), Some((_, ref_ticks, _))) =
            (dsp.inference, reference.inference)
        else {
            continue;
        };
        eprintln!(
            "\nint8 digits on {}: ember-cortex-m's DSP kernels vs the reference (timer ticks of image 0; \
             ticks are instructions x a constant under -icount):",
            dsp.name
        );
        eprintln!(
            "    {:>3} {:<20} {:>10} {:>10} {:>7}",
            "op", "", "reference", "dsp", "ref/dsp"
        );
        for ((i, name, d), (_, _, r)) in dsp.ops.iter().zip(&reference.ops) {
            eprintln!(
                "    {i:>3} {name:<20} {r:>10} {d:>10} {:>6.2}x",
                *r as f64 / (*d).max(1) as f64
            );
        }
        eprintln!(
            "  per inference ({n} images): reference {} ticks, DSP {} ticks: {:.2}x fewer instructions",
            ref_ticks / n.max(1),
            dsp_ticks / n.max(1),
            ref_ticks as f64 / dsp_ticks.max(1) as f64
        );
    }
}

/// The figures of a firmware check as Markdown, for `cargo xtask bench`'s report: per board and model the
/// sections, the model's share of `.rodata`, arena, instructions per inference; DSP against reference
/// kernels per op; Ember's flash cost.
pub(super) fn markdown_report(
    results: &[BoardResult],
    variants: &[Variant],
    flash: &[FlashCost],
) -> String {
    let mut s = String::from(
        "| board | model | agree | accuracy | arena | .text | .rodata (model blob) | .data | .bss | instructions / inference |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let insns = |(images, ticks, tps): (u64, u64, u64)| {
        ticks as f64 * 1e9 / (tps as f64 * f64::from(1u32 << ICOUNT_SHIFT)) / images.max(1) as f64
    };
    for r in results {
        let blob = variants
            .iter()
            .find(|v| v.name == r.variant)
            .and_then(|v| fs::metadata(&v.model).ok())
            .map_or(0, |m| m.len());
        s.push_str(&format!(
            "| {} | {} | {}/{} | {}/{} | {} | {} | {} ({blob}) | {} | {} | {} |\n",
            r.name,
            r.variant,
            r.agree,
            r.images,
            r.correct,
            r.images,
            r.arena_bytes.map_or("?".to_string(), |a| a.to_string()),
            r.sections.text,
            r.sections.rodata,
            r.sections.data,
            r.sections.bss,
            r.inference
                .map_or("?".to_string(), |i| format!("{:.0}", insns(i))),
        ));
    }
    s.push_str(
        "\nThe int8 model is Ember's post-training quantization of the digits CNN; `int8-ref` runs it on the \
         portable reference kernels, `int8` on the board's table (ember-cortex-m's SMLAD kernels on the \
         M4F and M7). Instructions come from `-icount` timer ticks. `.rodata` also holds the 360 test \
         images (92 KB).\n",
    );
    if let (Some(dsp), Some(reference)) = (
        results
            .iter()
            .find(|r| r.variant == "int8" && r.name == "mps2-an386"),
        results
            .iter()
            .find(|r| r.variant == "int8-ref" && r.name == "mps2-an386"),
    ) {
        s.push_str(
            "\nint8 digits on mps2-an386, image 0, timer ticks per op:\n\n\
             | op | kind | reference | DSP | reference / DSP |\n| --- | --- | --- | --- | --- |\n",
        );
        for ((i, name, d), (_, _, r)) in dsp.ops.iter().zip(&reference.ops) {
            s.push_str(&format!(
                "| {i} | {name} | {r} | {d} | {:.2} |\n",
                *r as f64 / (*d).max(1) as f64
            ));
        }
    }
    if let Some(base) = flash.first().map(|c| c.baseline) {
        s.push_str(&format!(
            "\nEmber's flash cost on mps2-an386: `.text` of a firmware minus that of the same board without \
             Ember ({base} bytes). `classify` runs inference only (the runtime: parse, session, dispatch, \
             the model's kernels); `digits` adds the demo's per-op profile and reports. The target for the \
             runtime is under 16 KiB (16384 bytes).\n\n\
             | model | classify .text | Ember (runtime) | digits .text | Ember (demo) | runtime target |\n\
             | --- | --- | --- | --- | --- | --- |\n"
        ));
        for c in flash {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                c.variant,
                c.classify,
                c.runtime(),
                c.digits,
                c.digits.saturating_sub(c.baseline),
                c.against_target()
            ));
        }
    }
    s
}

/// Prints the per-op timer profile of the first image (SysTick on Arm, `mtime` on RISC-V), with the instruction count it implies.
pub(super) fn print_profile(report: &Report) {
    let Some((images, ticks, tps)) = report.inference else {
        return;
    };
    // With -icount shift=N an instruction takes 2^N ns, so a tick is 1e9 / (tps * 2^N) instructions.
    let insns = |t: u64| t as f64 * 1e9 / (tps as f64 * f64::from(1u32 << ICOUNT_SHIFT));
    eprintln!(
        "  inference        {images} images in {ticks} timer ticks at {tps} Hz: {:.0} ticks, ~{:.0} instructions per image",
        ticks as f64 / images as f64,
        insns(ticks) / images as f64
    );
    eprintln!("  profile of image 0 (ticks, ~instructions):");
    for (index, name, t) in &report.ops {
        eprintln!("    {index:>3} {name:<16} {t:>9} {:>9.0}", insns(*t));
    }
}

/// Section sizes of a firmware ELF, in bytes.
pub(super) struct Sections {
    pub(super) text: u64,
    pub(super) rodata: u64,
    pub(super) data: u64,
    pub(super) bss: u64,
    /// Everything the board stores (code, read-only data and `.data`'s initial values, vector tables):
    /// the flash a board with flash needs, the RAM image `-kernel` loads on the RISC-V `virt` machine.
    pub(super) image: u64,
}

impl Sections {
    pub(super) fn read(elf: &Path) -> Result<Self> {
        let bytes = fs::read(elf).with_context(|| format!("cannot read {}", elf.display()))?;
        let file = object::File::parse(&*bytes)
            .with_context(|| format!("{} is not an ELF file", elf.display()))?;
        let size = |name: &str| file.section_by_name(name).map_or(0, |s| s.size());
        let image = file
            .sections()
            .filter(|s| {
                matches!(
                    s.kind(),
                    SectionKind::Text
                        | SectionKind::Data
                        | SectionKind::ReadOnlyData
                        | SectionKind::ReadOnlyString
                        | SectionKind::ReadOnlyDataWithRel
                )
            })
            .map(|s| s.size())
            .sum();
        Ok(Sections {
            text: size(".text"),
            rodata: size(".rodata"),
            data: size(".data"),
            bss: size(".bss") + size(".uninit"),
            image,
        })
    }

    pub(super) fn print(&self) {
        eprintln!(
            "  sections         .text {}  .rodata {}  .data {}  .bss {} bytes",
            self.text, self.rodata, self.data, self.bss
        );
        eprintln!(
            "  image {} bytes (code, read-only data, .data's initial values), static RAM {} bytes (.data + .bss; the arena is on the stack)",
            self.image,
            self.data + self.bss
        );
    }
}

/// One variant's flash cost on the mps2-an386 crate (see `print_flash_cost`).
pub(crate) struct FlashCost {
    pub variant: &'static str,
    /// `.text` of the `digits` demo firmware.
    pub digits: u64,
    /// `.text` of the `classify` firmware (inference only).
    pub classify: u64,
    /// `.text` of the `baseline` firmware (no Ember).
    pub baseline: u64,
}

/// The runtime's flash target for the digits op set: under 16 KiB.
pub(crate) const FLASH_TARGET: u64 = 16 * 1024;

impl FlashCost {
    /// The runtime's flash cost: `classify` minus `baseline`.
    pub(crate) fn runtime(&self) -> u64 {
        self.classify.saturating_sub(self.baseline)
    }

    /// Whether the runtime is under [`FLASH_TARGET`], and by how much, in words.
    pub(crate) fn against_target(&self) -> String {
        let runtime = self.runtime();
        if runtime < FLASH_TARGET {
            format!("under 16 KiB by {} B", FLASH_TARGET - runtime)
        } else {
            format!("over 16 KiB by {} B", runtime - FLASH_TARGET + 1)
        }
    }
}
