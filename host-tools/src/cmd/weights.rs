//! `--weights`, `--rename`, `--strict`, `--lora`: binding a checkpoint (and merging a LoRA adapter)
//! into an ONNX graph before `ember convert` or `ember inspect` converts it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ember_convert::bind::{self, BindOptions, Lora, LoraConfig, Rename};
use ember_convert::weights::{self, Checkpoint};

/// The checkpoint options shared by `convert` and `inspect`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct WeightArgs {
    /// Trained weights to bind to the graph's initializers by name: .safetensors, a PyTorch
    /// checkpoint (.pt/.pth/.bin, zip or legacy layout) or .npz. Nothing in the file is run.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// Rename checkpoint tensors before binding: FROM=TO replaces a prefix, re:PATTERN=REPLACEMENT a
    /// regex match ($1 for groups); an empty result drops the tensor (repeatable, applied in order).
    #[arg(long = "rename", value_name = "FROM=TO")]
    pub renames: Vec<String>,
    /// Make checkpoint tensors that bind to no initializer (or that no layer of a model folder reads)
    /// an error instead of a notice.
    #[arg(long)]
    pub strict: bool,
    /// A PEFT LoRA adapter to merge into the weights before any quantization: its
    /// adapter_model.safetensors (or the folder holding it), with adapter_config.json beside it.
    #[arg(long, value_name = "ADAPTER")]
    pub lora: Option<PathBuf>,
    /// Multiplies the LoRA update: W + S * (alpha / r) * B @ A.
    #[arg(long, value_name = "S", default_value_t = 1.0, requires = "lora")]
    pub lora_scale: f64,
}

impl WeightArgs {
    /// True when there is something to bind or merge.
    pub fn any(&self) -> bool {
        self.weights.is_some() || self.lora.is_some()
    }
}

/// Parses the checkpoint `bytes` read from `path` (its tensors borrow them), printing the reader's
/// notices.
fn parse_checkpoint<'a>(path: &Path, bytes: &'a [u8]) -> Result<Checkpoint<'a>> {
    let ckpt = Checkpoint::parse(bytes).map_err(|e| weights::in_file(e, path))?;
    for n in ckpt.notices() {
        eprintln!("notice: {}: {n}", path.display());
    }
    Ok(ckpt)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads a LoRA adapter: the safetensors file (or a folder with adapter_model.safetensors) and the
/// adapter_config.json beside it.
fn read_lora(path: &Path, scale: f64) -> Result<Lora<'static>> {
    let file = if path.is_dir() {
        path.join("adapter_model.safetensors")
    } else {
        path.to_path_buf()
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let config_path = dir.join("adapter_config.json");
    let config = std::fs::read_to_string(&config_path).with_context(|| {
        format!(
            "cannot read {} (PEFT writes it beside the adapter; it holds r, lora_alpha and \
             target_modules)",
            config_path.display()
        )
    })?;
    let config = LoraConfig::from_json(&config)
        .with_context(|| format!("cannot read {}", config_path.display()))?;
    let bytes = read(&file)?;
    let tensors = parse_checkpoint(&file, &bytes)?.into_owned();
    Lora::new(&tensors, &config, scale)
        .with_context(|| format!("cannot use the LoRA adapter {}", file.display()))
}

/// The naming rules `--rename` and `--strict` give.
pub fn bind_options(args: &WeightArgs) -> Result<BindOptions> {
    Ok(BindOptions {
        renames: args
            .renames
            .iter()
            .map(|r| Rename::parse(r))
            .collect::<Result<_, _>>()?,
        strict: args.strict,
    })
}

/// Binds `args.weights` and merges `args.lora` into the ONNX model `onnx` (read from `model`),
/// printing notices, the LoRA merges and, with `verbose`, the whole report. `None` when there is
/// nothing to do.
pub fn bind(
    model: &Path,
    onnx: &[u8],
    args: &WeightArgs,
    verbose: bool,
) -> Result<Option<bind::Bound>> {
    if !args.any() {
        if !args.renames.is_empty() || args.strict {
            bail!("--rename and --strict are about checkpoint tensors: give the checkpoint with --weights (or a --lora adapter)");
        }
        return Ok(None);
    }
    let opts = bind_options(args)?;
    let file = args.weights.as_deref().map(read).transpose()?;
    let ckpt = match (&args.weights, &file) {
        (Some(path), Some(bytes)) => Some(parse_checkpoint(path, bytes)?),
        _ => None,
    };
    let lora = args
        .lora
        .as_deref()
        .map(|p| read_lora(p, args.lora_scale))
        .transpose()?;
    let what = match (&args.weights, &args.lora) {
        (Some(w), _) => w.display().to_string(),
        (None, Some(l)) => l.display().to_string(),
        (None, None) => unreachable!("checked by any()"),
    };
    let bound = bind::bind(onnx, ckpt.as_ref(), lora.as_ref(), &opts)
        .with_context(|| format!("cannot bind {what} to {}", model.display()))?;
    let r = &bound.report;
    for n in &r.notices {
        eprintln!("notice: {n}");
    }
    if let (Some(path), Some(ckpt)) = (&args.weights, &ckpt) {
        eprintln!(
            "bound {} initializers from {} ({}, {} tensors){}",
            r.bound.len(),
            path.display(),
            ckpt.format().map_or("checkpoint", |f| f.name()),
            ckpt.len(),
            if r.kept.is_empty() {
                String::new()
            } else {
                format!("; kept {} graph constants", r.kept.len())
            }
        );
    }
    if !r.lora.is_empty() {
        let layers: Vec<String> = r
            .lora
            .iter()
            .map(|m| format!("{} -> {}", m.module, m.initializer))
            .collect();
        eprintln!(
            "LoRA: merged {} layer{}: {}",
            r.lora.len(),
            if r.lora.len() == 1 { "" } else { "s" },
            layers.join(", ")
        );
    }
    if verbose {
        for line in r.lines() {
            println!("{line}");
        }
    }
    Ok(Some(bound))
}
