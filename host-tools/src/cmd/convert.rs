//! `ember convert`: ONNX to `.ember`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use ember_convert::{convert, ConvertOptions};

#[derive(clap::Args)]
pub struct Args {
    /// The ONNX model.
    pub model: PathBuf,
    /// Where to write the blob.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Fix an input's dynamic dimensions, as NAME=1,3,48,192 (repeatable).
    #[arg(long = "shape", value_name = "NAME=DIMS")]
    pub shapes: Vec<String>,
    /// Leave tensor and node names out of the blob (smaller; `inspect` then shows indices only).
    #[arg(long)]
    pub strip_names: bool,
}

pub fn parse_shape(arg: &str) -> Result<(String, Vec<usize>)> {
    let Some((name, dims)) = arg.split_once('=') else {
        bail!("--shape {arg:?}: expected NAME=DIMS, for example --shape input=1,3,224,224");
    };
    let dims = dims
        .split(',')
        .map(|d| d.trim().parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| {
            format!("--shape {arg:?}: dimensions must be positive integers separated by commas")
        })?;
    if dims.contains(&0) {
        bail!("--shape {arg:?}: dimensions must be positive");
    }
    Ok((name.to_string(), dims))
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let shapes = args
        .shapes
        .iter()
        .map(|s| parse_shape(s))
        .collect::<Result<Vec<_>>>()?;
    let bytes = std::fs::read(&args.model)
        .with_context(|| format!("cannot read {}", args.model.display()))?;
    let opts = ConvertOptions {
        shapes,
        keep_names: !args.strip_names,
    };
    let pb = super::spinner("converting");
    let converted = convert(&bytes, &opts);
    pb.finish_and_clear();
    let converted =
        converted.with_context(|| format!("cannot convert {}", args.model.display()))?;
    for notice in &converted.report.notices {
        eprintln!("notice: {notice}");
    }
    // Write to a temporary name first so that a failure never leaves a partial blob behind.
    let tmp = args.output.with_extension("ember.tmp");
    std::fs::write(&tmp, &converted.blob)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &args.output)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    let r = &converted.report;
    println!(
        "wrote {} ({} bytes: {} ops, weights {} bytes, arena {} bytes)",
        args.output.display(),
        r.blob_bytes,
        r.ops.len(),
        r.weights_bytes,
        r.arena.persistent_bytes + r.arena.activation_bytes + r.arena.scratch_bytes,
    );
    Ok(ExitCode::SUCCESS)
}
