//! `ember inspect model.onnx --passes`: converts the model in memory, prints what the import, each
//! graph pass and the lowering changed, then inspects the resulting blob.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use ember_convert::{convert, ConvertOptions, Converted, PassRecord};

pub fn run_passes(
    path: &Path,
    shapes: &[String],
    weights: &crate::cmd::weights::WeightArgs,
) -> Result<ExitCode> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.starts_with(&ember_core::format::MAGIC) {
        bail!(
            "{} is an .ember blob: the graph passes are only known when converting from ONNX; \
             pass the .onnx model instead (ember inspect model.onnx --passes)",
            path.display()
        );
    }
    let converted = convert_in_memory(path, &bytes, shapes, weights)?;
    print_log(path, &converted.report.passes);
    println!();
    let blob = ember_core::AlignedBuf::from_bytes(&converted.blob);
    super::show(path, &blob)
}

/// `--weights` and `--lora` bind to an ONNX graph, not to a converted blob.
pub(super) fn no_weights_for_a_blob(
    path: &Path,
    weights: &crate::cmd::weights::WeightArgs,
) -> Result<()> {
    if weights.any() {
        bail!(
            "{} is an .ember blob, whose weights are already fixed: --weights and --lora bind to \
             the ONNX graph it was converted from",
            path.display()
        );
    }
    Ok(())
}

/// Converts the ONNX model `bytes` (read from `path`) with the default options, names kept and the
/// `--shape` overrides, printing the converter's notices; with `--weights` or `--lora`, binds them
/// first and prints the bind report.
pub(super) fn convert_in_memory(
    path: &Path,
    bytes: &[u8],
    shapes: &[String],
    weights: &crate::cmd::weights::WeightArgs,
) -> Result<Converted> {
    let bound = crate::cmd::weights::bind(path, bytes, weights, true)?;
    if bound.is_some() {
        println!();
    }
    let bytes = bound.as_ref().map_or(bytes, |b| b.onnx.as_slice());
    let shapes = shapes
        .iter()
        .map(|s| crate::cmd::common::parse_shape(s))
        .collect::<Result<Vec<_>>>()?;
    let opts = ConvertOptions {
        shapes,
        keep_names: true,
        ..Default::default()
    };
    let converted =
        convert(bytes, &opts).with_context(|| format!("cannot convert {}", path.display()))?;
    for notice in &converted.report.notices {
        eprintln!("notice: {notice}");
    }
    Ok(converted)
}

/// Prints the log as a table: one row per record that changed something (continued over one line
/// per change), and one `(no change)` row per round for the passes that changed nothing.
fn print_log(path: &Path, log: &[PassRecord]) {
    let changed = log
        .iter()
        .filter(|r| r.stage != "import" && r.stage != "lower" && !r.changes.is_empty())
        .count();
    let applied = log
        .iter()
        .filter(|r| r.stage != "import" && r.stage != "lower")
        .count();
    println!(
        "passes of {}: {applied} pass applications, {changed} changed the graph",
        path.display()
    );
    println!(
        "  {:<9} {:<17} {:>5}  {:<12} changes",
        "stage", "pass", "round", "nodes"
    );
    let indent = " ".repeat(2 + 9 + 1 + 17 + 1 + 5 + 2 + 12 + 1);
    let mut i = 0;
    while i < log.len() {
        // One (stage, round) group at a time.
        let (stage, round) = (log[i].stage, log[i].round);
        let end = log[i..]
            .iter()
            .position(|r| (r.stage, r.round) != (stage, round))
            .map_or(log.len(), |n| i + n);
        let group = &log[i..end];
        let fixed = stage == "import" || stage == "lower";
        for r in group.iter().filter(|r| fixed || !r.changes.is_empty()) {
            let round = if fixed {
                "-".to_string()
            } else {
                r.round.to_string()
            };
            let nodes = format!("{} -> {}", r.nodes_before, r.nodes_after);
            let mut changes = r.changes.iter();
            println!(
                "  {:<9} {:<17} {:>5}  {:<12} {}",
                r.stage,
                r.name,
                round,
                nodes,
                changes.next().map_or("-", String::as_str)
            );
            for c in changes {
                println!("{indent}{c}");
            }
        }
        let unchanged: Vec<&str> = group
            .iter()
            .filter(|r| !fixed && r.changes.is_empty())
            .map(|r| r.name)
            .collect();
        if let Some(r) = group.first().filter(|_| !unchanged.is_empty()) {
            let nodes = format!("{} -> {}", r.nodes_before, r.nodes_before);
            let nodes = if unchanged.len() == group.len() {
                nodes
            } else {
                String::new()
            };
            println!(
                "  {:<9} {:<17} {:>5}  {:<12} {}",
                stage,
                "(no change)",
                round,
                nodes,
                unchanged.join(", ")
            );
        }
        i = end;
    }
}
