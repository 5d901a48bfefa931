//! One module per subcommand.

pub mod bench;
pub mod convert;
pub mod demo;
pub mod device;
pub mod flash;
pub mod inspect;
pub mod qemu;
pub mod run;
pub mod weights;

use std::path::Path;

use anyhow::{Context, Result};
use ember_core::{AlignedBuf, Model};

/// Reads a blob from disk into a 16-byte-aligned buffer.
pub fn read_blob(path: &Path) -> Result<AlignedBuf> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(AlignedBuf::from_bytes(&bytes))
}

/// Parses a blob, naming the file in the error.
pub fn parse<'b>(blob: &'b AlignedBuf, path: &Path) -> Result<Model<'b>> {
    Model::parse(blob.as_bytes()).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The host CPU for `run`, `bench`, `profile` and `demo`: `ember-cpu`'s kernels for this CPU's
/// instruction-set level (`EMBER_CPU_ISA` forces a lower one) with `threads` workers in all (0: one per
/// core).
pub fn host_cpu(threads: usize) -> Result<ember_cpu::Cpu> {
    ember_cpu::Cpu::new(threads).map_err(|e| anyhow::anyhow!("{e}"))
}

/// An arena for a session of `model` on `cpu`: the converter's plan plus the scratch its kernels ask for.
pub fn host_arena(cpu: &ember_cpu::Cpu, model: &Model<'_>) -> Result<AlignedBuf> {
    Ok(AlignedBuf::zeroed(cpu.arena_bytes(model)?))
}

/// How the CPU runs, for reports: `cpu-avx2, 1 thread`.
pub fn cpu_label(cpu: &ember_cpu::Cpu) -> String {
    let threads = cpu.threads();
    format!(
        "{}, {threads} thread{}",
        ember_cpu::table(cpu.isa()).name,
        if threads == 1 { "" } else { "s" }
    )
}

/// A spinner on stderr for steps that may take more than a second (hidden when stderr is not a terminal).
pub fn spinner(msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(100));
    pb
}

/// A progress bar over `n` steps.
pub fn progress(n: u64, msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new(n);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta})")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg.to_string());
    pb
}

/// Formats a shape as `[1, 3, 8, 8]`.
pub fn shape_str<T: std::fmt::Display>(dims: &[T]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Splits `NAME=value` into `(Some(NAME), value)`, or `(None, value)` when there is no `=`.
pub fn split_named(arg: &str) -> (Option<&str>, &str) {
    match arg.split_once('=') {
        Some((name, value)) if !name.is_empty() => (Some(name), value),
        _ => (None, arg),
    }
}
