//! `ember convert`: ONNX to `.ember`, with trained weights bound from a checkpoint (`--weights`) and a
//! LoRA adapter merged (`--lora`) first; or a Hugging Face model folder (`config.json` and
//! `model.safetensors`, or a zip of such a folder) built by `ember_convert::build::hf`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use ember_convert::build::hf::{self, ModelFiles};
use ember_convert::{convert, convert_with, ConvertOptions, RequantRounding, WeightStorage};

use super::common::{progress, spinner};

#[derive(clap::Args)]
pub struct Args {
    /// The ONNX model, or a Hugging Face model folder (config.json + model.safetensors; or a .zip of
    /// one, as sentence-transformers ships them).
    pub model: PathBuf,
    /// Where to write the blob.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Fix an input's dynamic dimensions, as NAME=1,3,48,192 (repeatable). A dim may be the name of a
    /// `--dim` (NAME=1,3,48,W): the blob then holds a shape variant per value.
    #[arg(long = "shape", value_name = "NAME=DIMS")]
    pub shapes: Vec<String>,
    /// Shape variants: a named dim and its values, as W=160,320,640, or S=16..=128:x2 for 16, 32, 64,
    /// 128 (repeatable; every combination is a variant, at most 16). The `--shape`s that use the name
    /// take each value; one blob, one weights section, one arena sized for the largest, and each run
    /// does the work of its own shape.
    #[arg(long = "dim", value_name = "NAME=VALUES")]
    pub dims: Vec<String>,
    /// With --dim: an input that may be given shorter than a variant's shape, padded at the end of
    /// each axis with VALUE, as NAME=VALUE (repeatable): a sequence's ids and attention mask with 0,
    /// so that a 12-token sentence runs in the 16-token variant. Declare it only where padding
    /// leaves the answer for the real part unchanged (a masked sequence) or is what the model
    /// expects (a background colour). Other inputs need a variant's exact shape.
    #[arg(long = "pad", value_name = "NAME=VALUE")]
    pub pads: Vec<String>,
    /// The most values a NonZero or NonMaxSuppression output may hold, as NAME=N, NAME its output
    /// (or node) name (repeatable): their counts depend on the data, so the output has room for N and
    /// holds -1 past the count.
    #[arg(long = "max-count", value_name = "NAME=N")]
    pub max_counts: Vec<String>,
    /// The most iterations of a Loop whose trip count is computed at run time, as NAME=N, NAME the
    /// Loop node's (or an output's) name (repeatable): its body is planned once, its stacked outputs
    /// for N iterations, and a run past N is an error.
    #[arg(long = "max-trip", value_name = "NAME=N")]
    pub max_trips: Vec<String>,
    /// Leave tensor and node names out of the blob (smaller; `inspect` then shows indices only).
    #[arg(long)]
    pub strip_names: bool,
    /// What to write: the blob; a Rust module (`-o model.rs`, with `model.ember` beside it and
    /// `ARENA_BYTES`); or an ELF object (`-o model.o`, with a linker fragment `model.x` and Rust glue `model.rs`).
    #[arg(long, value_enum, default_value_t = Emit::Blob)]
    pub emit: Emit,
    /// Target of `--emit object`: thumbv6m, thumbv7m, thumbv7em (hard float), thumbv8m.main, riscv32imac, ...
    #[arg(long, default_value = "thumbv7em")]
    pub target_arch: String,
    /// Symbol of the blob in `--emit object`.
    #[arg(long, default_value = "ember_model")]
    pub symbol: String,
    /// Quantize the model: `int8` after calibrating it on `--calibrate` samples (post-training
    /// quantization: int8 activations per tensor, int8 weights per channel); `int8-weights` stores the
    /// weights of fully connected layers and embedding tables in int8 per channel and keeps
    /// activations f32 (no calibration; for transformers).
    #[arg(long, value_enum)]
    pub quantize: Option<Quantize>,
    /// Calibration samples: a .npy of N inputs (`[N, ...]`, each the model input's size), or a folder of
    /// .npy files. Use training data, not the data you evaluate on.
    #[arg(long, value_name = "NPY_OR_DIR", requires = "quantize")]
    pub calibrate: Option<PathBuf>,
    /// How a tensor's range is taken: `minmax`, or `percentile:99.99` (ignores the rarest outliers).
    #[arg(long, default_value = "minmax", requires = "quantize")]
    pub calibration: String,
    /// Also write the quantized model as an ONNX QDQ file (to check it with onnxruntime, say).
    #[arg(long, value_name = "FILE.onnx", requires = "quantize")]
    pub save_qdq: Option<PathBuf>,
    /// How int8 ops round when they requantize: `single` (one rounding; agrees with onnxruntime) or
    /// `double` (TFLite's default arithmetic; bit-identical to TFLM's reference kernels). Default:
    /// `double` for a .tflite model (what its users compare against), `single` otherwise.
    #[arg(long, value_enum)]
    pub rounding: Option<RoundingArg>,
    #[command(flatten)]
    pub weights: super::weights::WeightArgs,
    /// Print what bound to what (with --weights or --lora).
    #[arg(short, long)]
    pub verbose: bool,
}

/// TFLite's double rounding for a `.tflite` file (by its file identifier), single otherwise.
fn default_rounding(model: &std::path::Path) -> RoundingArg {
    let mut head = [0u8; 8];
    let tflite = std::fs::File::open(model)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| ember_convert::tflite::is_tflite(&head));
    if tflite {
        RoundingArg::Double
    } else {
        RoundingArg::Single
    }
}

/// `--rounding` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RoundingArg {
    /// One rounding of the exact product (TFLite's TFLITE_SINGLE_ROUNDING; onnxruntime's results).
    Single,
    /// A rounding doubling high multiply, then a rounding shift (TFLite's default; TFLM's results).
    Double,
}

impl From<RoundingArg> for RequantRounding {
    fn from(r: RoundingArg) -> Self {
        match r {
            RoundingArg::Single => RequantRounding::Single,
            RoundingArg::Double => RequantRounding::Double,
        }
    }
}

/// Quantization targets of `ember convert --quantize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Quantize {
    /// int8 activations and weights (the TFLite int8 scheme).
    Int8,
    /// Weight-only int8: int8 weights per output channel with f32 scales, f32 activations.
    #[value(name = "int8-weights")]
    Int8Weights,
}

/// Output forms of `ember convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The .ember blob.
    Blob,
    /// A Rust module that embeds the blob, with `ARENA_BYTES`.
    Rust,
    /// An ELF relocatable object with a `.ember.model` section, a linker fragment and Rust glue.
    Object,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let mut opts = ConvertOptions::default();
    for s in &args.shapes {
        opts.add_shape(s).map_err(anyhow::Error::msg)?;
    }
    opts.dims = args
        .dims
        .iter()
        .map(|d| ConvertOptions::parse_dim(d).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    opts.pads = args
        .pads
        .iter()
        .map(|d| ConvertOptions::parse_pad(d).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    let variants = !opts.dims.is_empty() || !opts.dim_shapes.is_empty();
    if variants && args.quantize == Some(Quantize::Int8) {
        bail!("--dim with --quantize int8 is not supported yet: convert one shape per blob to calibrate");
    }
    let max_counts = args
        .max_counts
        .iter()
        .map(|s| ConvertOptions::parse_max_count(s).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    let max_trips = args
        .max_trips
        .iter()
        .map(|s| ConvertOptions::parse_max_trip(s).map_err(anyhow::Error::msg))
        .collect::<Result<Vec<_>>>()?;
    let opts = ConvertOptions {
        max_counts,
        max_trips,
        keep_names: !args.strip_names,
        rounding: args
            .rounding
            .unwrap_or_else(|| default_rounding(&args.model))
            .into(),
        ..opts
    };
    let storage = match args.quantize {
        Some(Quantize::Int8Weights) => {
            if args.calibrate.is_some() || args.save_qdq.is_some() {
                bail!("--quantize int8-weights needs no calibration (--calibrate, --save-qdq are for --quantize int8)");
            }
            WeightStorage::Int8
        }
        _ => WeightStorage::Float,
    };
    let converted = if ModelFiles::is_model(&args.model) {
        convert_folder(args, &opts, storage)?
    } else {
        let bytes = std::fs::read(&args.model)
            .with_context(|| format!("cannot read {}", args.model.display()))?;
        let bytes = match super::weights::bind(&args.model, &bytes, &args.weights, args.verbose)? {
            Some(bound) => bound.onnx,
            None => bytes,
        };
        let pb = spinner("converting");
        let converted = convert_with(&bytes, &opts, storage);
        pb.finish_and_clear();
        let mut converted =
            converted.with_context(|| format!("cannot convert {}", args.model.display()))?;
        if args.quantize == Some(Quantize::Int8) {
            converted = quantize_int8(args, &bytes, &opts, &converted)?;
        }
        converted
    };
    for notice in &converted.report.notices {
        eprintln!("notice: {notice}");
    }
    let r = &converted.report;
    let aligned = ember_core::AlignedBuf::from_bytes(&converted.blob);
    // A firmware built with `KERNEL_ENTRIES` reads the variants of a blob that has them.
    let (arena_bytes, kernel_entries, variants) = ember_core::Model::parse(aligned.as_bytes())
        .and_then(|m| {
            Ok((
                m.arena_bytes(),
                m.build_entries()?,
                crate::emit::variant_items(&m),
            ))
        })
        .map_err(|e| anyhow::anyhow!("the converted blob does not parse: {e}"))?;
    let sizes = crate::emit::Sizes {
        arena_bytes,
        blob_bytes: converted.blob.len(),
        kernel_entries,
    };
    let source = args.model.display().to_string();
    let sibling = |ext: &str| args.output.with_extension(ext);
    let file_name = |p: &std::path::Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match args.emit {
        Emit::Blob => crate::emit::write(&args.output, &converted.blob)?,
        Emit::Rust => {
            let blob_path = sibling("ember");
            if blob_path == args.output {
                bail!("--emit rust writes a Rust module: name it model.rs (the blob goes beside it as model.ember)");
            }
            crate::emit::write(&blob_path, &converted.blob)?;
            let module =
                crate::emit::rust_module(&file_name(&blob_path), &source, &sizes, &variants);
            crate::emit::write(&args.output, module.as_bytes())?;
            println!("wrote {}", blob_path.display());
        }
        Emit::Object => {
            let object = crate::emit::elf_object(&converted.blob, &args.target_arch, &args.symbol)?;
            let (script, glue) = (sibling("x"), sibling("rs"));
            if script == args.output || glue == args.output {
                bail!("--emit object writes an object file: name it model.o (model.x and model.rs go beside it)");
            }
            crate::emit::write(&args.output, &object)?;
            crate::emit::write(
                &script,
                crate::emit::linker_fragment(&file_name(&args.output)).as_bytes(),
            )?;
            let glue_text = crate::emit::object_glue(&source, &args.symbol, &sizes);
            crate::emit::write(&glue, glue_text.as_bytes())?;
            println!("wrote {} and {}", script.display(), glue.display());
        }
    }
    println!(
        "wrote {} ({} bytes: {} ops, weights {} bytes, arena {} bytes)",
        args.output.display(),
        r.blob_bytes,
        r.ops.len(),
        r.weights_bytes,
        arena_bytes,
    );
    if !r.variants.is_empty() && !opts.pads.is_empty() {
        let pads: Vec<String> = opts
            .pads
            .iter()
            .map(|(n, v)| format!("{n} with {v}"))
            .collect();
        println!(
            "  an input shorter than a variant runs in the smallest that covers it, padded: {}",
            pads.join(", ")
        );
    }
    for v in &r.variants {
        let dims: Vec<String> = v.dims.iter().map(|(n, d)| format!("{n}={d}")).collect();
        println!(
            "  variant {:<14} {:>4} ops, activations {:>9} bytes (lower bound {}), scratch {}{}",
            dims.join(","),
            v.ops,
            v.arena.activation_bytes,
            v.arena.lower_bound_bytes,
            v.arena.scratch_bytes,
            if v.largest {
                "  (largest: sizes the arena)"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A Hugging Face model folder (or zip of one), built and converted.
fn convert_folder(
    args: &Args,
    opts: &ConvertOptions,
    storage: WeightStorage,
) -> Result<ember_convert::Converted> {
    let w = &args.weights;
    if w.weights.is_some() || w.lora.is_some() {
        bail!(
            "{} is a model folder with its own weights: --weights and --lora apply to ONNX graphs",
            args.model.display()
        );
    }
    if args.quantize == Some(Quantize::Int8) {
        bail!("--quantize int8 calibrates ONNX graphs; for a model folder use --quantize int8-weights");
    }
    let hf_opts = hf::Options {
        bind: super::weights::bind_options(w)?,
        ..hf::Options::default()
    };
    let pb = spinner("reading and building");
    let done = ModelFiles::open(&args.model)
        .and_then(|files| hf::convert(&files, opts, &hf_opts, storage));
    pb.finish_and_clear();
    let done = done.with_context(|| format!("cannot convert {}", args.model.display()))?;
    eprintln!(
        "built from {}: {} weights read",
        args.model.display(),
        done.bind.bound.len()
    );
    if args.verbose {
        for line in done.bind.lines() {
            println!("{line}");
        }
    }
    Ok(done.converted)
}

/// `--quantize int8`: calibrate, rewrite as QDQ, convert that, and report the agreement with the float
/// model on the calibration samples.
fn quantize_int8(
    args: &Args,
    onnx: &[u8],
    opts: &ConvertOptions,
    float: &ember_convert::Converted,
) -> Result<ember_convert::Converted> {
    use ember_convert::quantize::{self, Calibration};
    let Some(path) = &args.calibrate else {
        bail!("--quantize int8 needs calibration data: --calibrate samples.npy (a few hundred training inputs)");
    };
    let method = match args.calibration.as_str() {
        "minmax" => Calibration::MinMax,
        other => match other.strip_prefix("percentile:").map(str::parse::<f32>) {
            Some(Ok(p)) if (50.0..=100.0).contains(&p) => Calibration::Percentile(p),
            _ => bail!("--calibration {other:?}: expected minmax or percentile:P with P in 50..=100 (e.g. percentile:99.99)"),
        },
    };
    let [(input, shape)] = float.report.inputs.as_slice() else {
        bail!(
            "--quantize calibrates models with one input; this one has {} ({})",
            float.report.inputs.len(),
            float
                .report
                .inputs
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let per_sample: usize = shape.iter().product();
    let mut files: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "npy"))
            .collect();
        v.sort();
        v
    } else {
        vec![path.clone()]
    };
    if files.is_empty() {
        bail!("{} holds no .npy files", path.display());
    }
    let mut samples: Vec<Vec<Vec<f32>>> = Vec::new();
    for f in files.drain(..) {
        let a = crate::npy::read_f32(&f)?;
        if per_sample == 0 || a.data.len() % per_sample != 0 {
            bail!(
                "{}: {} values do not split into samples of input \"{input}\" {:?} ({per_sample} values each)",
                f.display(),
                a.data.len(),
                shape
            );
        }
        samples.extend(a.data.chunks(per_sample).map(|c| vec![c.to_vec()]));
    }
    let pb = progress(samples.len() as u64, "calibrating");
    let ranges = quantize::calibrate(onnx, opts, &samples, method, &mut |done, _| {
        pb.set_position(done as u64)
    });
    pb.finish_and_clear();
    let ranges = ranges.context("calibration failed")?;
    let (qdq, summary) = quantize::quantize_qdq(onnx, &ranges).context("quantization failed")?;
    eprintln!(
        "quantized: {} activations, {} weight tensors (per channel), {} biases, calibrated on {} samples ({})",
        summary.activations,
        summary.weights,
        summary.biases,
        samples.len(),
        args.calibration
    );
    if summary.batch_norms_folded > 0 {
        eprintln!(
            "quantized: {} BatchNormalization(s) folded into the Conv or Gemm before them",
            summary.batch_norms_folded
        );
    }
    for s in &summary.skipped {
        eprintln!("notice: left in float: {s}");
    }
    if let Some(p) = &args.save_qdq {
        if summary.opset < 13 {
            bail!(
                "cannot write {}: the quantized model keeps the float model's opset {}, and per-channel \
                 DequantizeLinear needs opset 13 for onnxruntime; upgrade the float model first \
                 (onnx.version_converter.convert_version(model, 13)), or leave out --save-qdq",
                p.display(),
                summary.opset
            );
        }
        crate::emit::write(p, &qdq)?;
        println!("wrote {}", p.display());
    }
    let int8 = convert(&qdq, opts).context("cannot convert the quantized (QDQ) model")?;
    let ag = quantize::agreement(&float.blob, &int8.blob, &samples)
        .context("cannot compare the float and int8 models")?;
    eprintln!(
        "float vs int8 on the calibration set: top-1 {}/{} rows agree ({:.2}%), cosine {:.5}, max |diff| {:.4}, mean |diff| {:.5}",
        ag.top1_same,
        ag.rows,
        100.0 * ag.top1_same as f64 / ag.rows.max(1) as f64,
        ag.cosine,
        ag.max_abs_diff,
        ag.mean_abs_diff
    );
    eprintln!("{}", int8_coverage(&int8.blob)?);
    Ok(int8)
}

/// One line on where an int8 model computes: how many ops run on int8 data, which are kept in float
/// (each between a Dequantize and a Quantize), and how many conversions that costs.
fn int8_coverage(blob: &[u8]) -> Result<String> {
    let aligned = ember_core::AlignedBuf::from_bytes(blob);
    let model = ember_core::Model::parse(aligned.as_bytes())
        .map_err(|e| anyhow::anyhow!("the int8 blob does not parse: {e}"))?;
    let mut float: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let (mut int8, mut boundary) = (0, 0);
    for i in 0..model.op_count() {
        let Some(op) = model.op(i) else { continue };
        let out = model.tensor(op.output as usize).map(|t| t.dtype);
        match op.kind.name() {
            "Quantize" | "Dequantize" => boundary += 1,
            _ if out == Some(ember_core::DType::F32) => {
                *float.entry(op.kind.name()).or_default() += 1
            }
            _ => int8 += 1,
        }
    }
    let kept: usize = float.values().sum();
    if kept == 0 {
        return Ok(format!(
            "int8 coverage: all {int8} ops run on int8 data ({boundary} Quantize/Dequantize at the edges)"
        ));
    }
    let list: Vec<String> = float.iter().map(|(k, n)| format!("{k} {n}")).collect();
    Ok(format!(
        "int8 coverage: {int8} ops run on int8 data, {kept} kept in float ({}), {boundary} Quantize/Dequantize around them",
        list.join(", ")
    ))
}
