//! Hugging Face model folders: `config.json` and the weights (`model.safetensors`, or a PyTorch
//! `pytorch_model.bin`), plus what sentence-transformers adds (`modules.json`, the pooling module's
//! `config.json`, a `Normalize` module), built with the [`Builder`] for the families Ember knows
//! ([`FAMILIES`]). The folder may also be a zip of one (sentence-transformers' `model.zip`), with the
//! files at its root or under one folder.
//!
//! ```no_run
//! use std::path::Path;
//! use ember_convert::{build::hf, ConvertOptions, WeightStorage};
//! let opts = ConvertOptions {
//!     shapes: vec![("input_ids".into(), vec![1, 128])],
//!     ..ConvertOptions::default()
//! };
//! let model = hf::ModelFiles::open(Path::new("all-MiniLM-L6-v2"))?;
//! let out = hf::convert(&model, &opts, &hf::Options::default(), WeightStorage::Int8)?;
//! std::fs::write("minilm.ember", &out.converted.blob).unwrap();
//! # Ok::<(), ember_convert::ConvertError>(())
//! ```

use std::path::{Path, PathBuf};

use super::bert::{self, BertConfig, Head, Inputs, Pooling};
use super::{Builder, Built};
use crate::bind::{BindOptions, BindReport, Rename};
use crate::ir::DType;
use crate::weights::archive::Archive;
use crate::weights::{in_file, Checkpoint};
use crate::{ConvertError, ConvertOptions, Converted, WeightStorage};

/// The `model_type`s Ember builds.
pub const FAMILIES: &[&str] = &["bert"];

/// Weight files looked for, in this order.
const WEIGHT_FILES: &[&str] = &["model.safetensors", "pytorch_model.bin"];

/// Largest file read from a zipped folder, in bytes.
const MAX_ENTRY: u64 = 16 << 30;

/// Where a model's files are.
enum Source {
    Dir(PathBuf),
    /// A zip's bytes, and the folder inside it holding `config.json` (`""` or `name/`).
    Zip(Vec<u8>, String),
}

/// A model folder, or a zip of one.
pub struct ModelFiles {
    source: Source,
    path: PathBuf,
}

fn model_err(reason: impl Into<String>) -> ConvertError {
    ConvertError::Model {
        reason: reason.into(),
    }
}

impl ModelFiles {
    /// True when `path` is a folder with a `config.json`, or a zip file (`.zip`) of one.
    pub fn is_model(path: &Path) -> bool {
        if path.is_dir() {
            return path.join("config.json").is_file();
        }
        path.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
            && path.is_file()
    }

    /// Opens a model folder or a zip of one.
    pub fn open(path: &Path) -> Result<Self, ConvertError> {
        let source = if path.is_dir() {
            if !path.join("config.json").is_file() {
                return Err(model_err(format!(
                    "{} holds no config.json: not a Hugging Face model folder",
                    path.display()
                )));
            }
            Source::Dir(path.to_path_buf())
        } else {
            let bytes = std::fs::read(path)
                .map_err(|e| model_err(format!("cannot read {}: {e}", path.display())))?;
            let names = Archive::open(&bytes)
                .map_err(|e| model_err(format!("{}: {e}", path.display())))?
                .names();
            // The shallowest config.json names the model's folder.
            let config = names
                .iter()
                .filter(|n| *n == "config.json" || n.ends_with("/config.json"))
                .min_by_key(|n| n.matches('/').count())
                .ok_or_else(|| {
                    model_err(format!(
                        "{} holds no config.json: not a zipped Hugging Face model folder",
                        path.display()
                    ))
                })?;
            let prefix = config.trim_end_matches("config.json").to_string();
            Source::Zip(bytes, prefix)
        };
        Ok(ModelFiles {
            source,
            path: path.to_path_buf(),
        })
    }

    /// Where the files are (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes of file `rel` (a path inside the folder, `/`-separated), `None` when absent.
    pub fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, ConvertError> {
        match &self.source {
            Source::Dir(dir) => {
                let p = dir.join(rel);
                if !p.is_file() {
                    return Ok(None);
                }
                std::fs::read(&p)
                    .map(Some)
                    .map_err(|e| model_err(format!("cannot read {}: {e}", p.display())))
            }
            Source::Zip(bytes, prefix) => {
                let mut zip = Archive::open(bytes)?;
                let entry = zip.entry(&format!("{prefix}{rel}"), MAX_ENTRY)?;
                Ok(entry.map(|b| b.as_slice().to_vec()))
            }
        }
    }

    fn json(&self, rel: &str) -> Result<Option<serde_json::Value>, ConvertError> {
        let Some(bytes) = self.read(rel)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| model_err(format!("{}: {rel}: {e}", self.path.display())))
    }
}

/// How to build a folder.
#[derive(Clone, Debug)]
pub struct Options {
    /// Element type of `input_ids` and `attention_mask`: I64 (as Hugging Face's ONNX exports) or
    /// I32.
    pub ids: DType,
    /// Naming rules for the checkpoint (`--rename`, `--strict`). `bert.` prefixes (a checkpoint of
    /// `BertForMaskedLM`, ...) and TensorFlow-era `gamma`/`beta` names are understood without rules.
    pub bind: BindOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ids: DType::I64,
            bind: BindOptions::default(),
        }
    }
}

/// What a folder asks for besides the encoder, read from sentence-transformers' files.
fn head(files: &ModelFiles) -> Result<(Head, Vec<String>), ConvertError> {
    let Some(modules) = files.json("modules.json")? else {
        return Ok((Head::default(), Vec::new()));
    };
    let list = modules
        .as_array()
        .ok_or_else(|| model_err("modules.json is not a list"))?;
    let mut head = Head::default();
    let mut notices = Vec::new();
    for m in list {
        let kind = m.get("type").and_then(|t| t.as_str()).unwrap_or_default();
        let path = m.get("path").and_then(|t| t.as_str()).unwrap_or_default();
        match kind.rsplit('.').next().unwrap_or_default() {
            "Transformer" => {}
            "Pooling" => {
                let rel = format!("{}config.json", folder(path));
                let cfg = files.json(&rel)?.ok_or_else(|| {
                    model_err(format!(
                        "modules.json names a Pooling module, but {rel} is missing"
                    ))
                })?;
                head.pooling = pooling(&cfg, &rel)?;
            }
            "Normalize" => head.normalize = true,
            other => {
                return Err(model_err(format!(
                    "modules.json: the sentence-transformers module \"{other}\" ({kind}) is not \
                     implemented; Ember builds Transformer, Pooling and Normalize"
                )))
            }
        }
    }
    if head.pooling.is_empty() {
        notices.push(
            "modules.json has no Pooling module: the output is the last hidden state".to_string(),
        );
    }
    Ok((head, notices))
}

fn folder(path: &str) -> String {
    if path.is_empty() || path.ends_with('/') {
        path.to_string()
    } else {
        format!("{path}/")
    }
}

/// The pooling modes a sentence-transformers `Pooling` config enables, in its concatenation order.
fn pooling(cfg: &serde_json::Value, rel: &str) -> Result<Vec<Pooling>, ConvertError> {
    let on = |key: &str| cfg.get(key).and_then(|v| v.as_bool()).unwrap_or(false);
    for key in ["pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"] {
        if on(key) {
            return Err(model_err(format!("{rel}: {key} is not implemented")));
        }
    }
    let modes: Vec<Pooling> = [
        ("pooling_mode_cls_token", Pooling::Cls),
        ("pooling_mode_max_tokens", Pooling::Max),
        ("pooling_mode_mean_tokens", Pooling::Mean),
        ("pooling_mode_mean_sqrt_len_tokens", Pooling::MeanSqrtLen),
    ]
    .into_iter()
    .filter(|(k, _)| on(k))
    .map(|(_, m)| m)
    .collect();
    if modes.is_empty() {
        return Err(model_err(format!("{rel} enables no pooling mode")));
    }
    Ok(modes)
}

/// The `[batch, seq]` of the ids from `--shape input_ids=...` (or `attention_mask=...`), `[1, 128]`
/// (with a notice) when neither is given.
fn io_shape(opts: &ConvertOptions, notices: &mut Vec<String>) -> Result<[usize; 2], ConvertError> {
    let mut shape = None;
    for (name, dims) in &opts.shapes {
        if name != "input_ids" && name != "attention_mask" {
            return Err(ConvertError::Input {
                name: name.clone(),
                reason: "--shape names no input of the model; its inputs are: input_ids, \
                         attention_mask"
                    .into(),
            });
        }
        let [b, s] = dims.as_slice() else {
            return Err(ConvertError::Input {
                name: name.clone(),
                reason: format!("--shape {dims:?}: give [batch, sequence length], e.g. 1,128"),
            });
        };
        if shape.is_some_and(|p| p != [*b, *s]) {
            return Err(ConvertError::Input {
                name: name.clone(),
                reason: "input_ids and attention_mask must have one shape".into(),
            });
        }
        shape = Some([*b, *s]);
    }
    Ok(shape.unwrap_or_else(|| {
        notices.push(
            "input_ids and attention_mask set to [1, 128]; choose with --shape input_ids=BATCH,LEN"
                .into(),
        );
        [1, 128]
    }))
}

/// A folder's architecture, with what it asked for.
pub struct Loaded {
    /// `config.json`'s `model_type`.
    pub model_type: String,
    config: serde_json::Value,
    head: Head,
    /// The weights file's name and bytes.
    pub weights: (String, Vec<u8>),
    notices: Vec<String>,
}

/// Reads a folder's configuration and weights file; a `model_type` outside [`FAMILIES`] is an error
/// naming it.
pub fn load(files: &ModelFiles) -> Result<Loaded, ConvertError> {
    let config = files
        .json("config.json")?
        .ok_or_else(|| model_err(format!("{} holds no config.json", files.path().display())))?;
    let model_type = config
        .get("model_type")
        .and_then(|t| t.as_str())
        .ok_or_else(|| model_err("config.json has no model_type"))?
        .to_string();
    if !FAMILIES.contains(&model_type.as_str()) {
        return Err(model_err(format!(
            "config.json: model_type \"{model_type}\" is not a family Ember builds; it knows: {} \
             (export the model to ONNX instead, and convert that)",
            FAMILIES.join(", ")
        )));
    }
    let (head, notices) = head(files)?;
    let mut weights = None;
    for name in WEIGHT_FILES {
        if let Some(bytes) = files.read(name)? {
            weights = Some((name.to_string(), bytes));
            break;
        }
    }
    let weights = weights.ok_or_else(|| {
        model_err(format!(
            "{} holds no weights: looked for {}",
            files.path().display(),
            WEIGHT_FILES.join(", ")
        ))
    })?;
    Ok(Loaded {
        model_type,
        config,
        head,
        weights,
        notices,
    })
}

/// Builds a loaded folder with the weights of `ckpt` (parsed from `loaded.weights`).
pub fn build(
    loaded: &Loaded,
    ckpt: &Checkpoint<'_>,
    convert: &ConvertOptions,
    opts: &Options,
) -> Result<Built, ConvertError> {
    let mut notices = loaded.notices.clone();
    let [batch, seq_len] = io_shape(convert, &mut notices)?;
    let mut bind = opts.bind.clone();
    // Checkpoints of BertFor* heads nest the encoder under `bert.`; TensorFlow-era ones say
    // gamma/beta for a LayerNorm's weight/bias.
    for rule in ["bert.=", r"re:\.gamma$=.weight", r"re:\.beta$=.bias"] {
        bind.renames.push(Rename::parse(rule)?);
    }
    let mut b = Builder::with_options(ckpt, &bind);
    match loaded.model_type.as_str() {
        "bert" => {
            let cfg = BertConfig::from_json(&loaded.config)?;
            let io = Inputs {
                batch,
                seq_len,
                ids: opts.ids,
            };
            bert::build(&mut b, &cfg, io, &loaded.head)?;
        }
        other => {
            return Err(ConvertError::internal(format!(
                "model_type {other} passed load() but has no builder"
            )))
        }
    }
    let mut built = b.finish()?;
    notices.append(&mut built.notices);
    built.notices = notices;
    Ok(built)
}

/// A converted folder, and where its weights came from.
pub struct FolderConverted {
    /// The blob and its report.
    pub converted: Converted,
    /// Which checkpoint tensor each weight came from, and what nothing read.
    pub bind: BindReport,
}

/// Reads, builds and converts a model folder (or zip of one). `convert.shapes` may give
/// `input_ids=BATCH,LEN`.
pub fn convert(
    files: &ModelFiles,
    convert: &ConvertOptions,
    opts: &Options,
    weights: WeightStorage,
) -> Result<FolderConverted, ConvertError> {
    let loaded = load(files)?;
    let (name, bytes) = &loaded.weights;
    let file = files.path().join(name);
    let ckpt = Checkpoint::parse(bytes).map_err(|e| in_file(e, &file))?;
    let mut bind = None;
    let mut one = |o: &ConvertOptions| {
        let mut built = build(&loaded, &ckpt, o, opts)?;
        built.notices.extend(ckpt.notices().iter().cloned());
        bind.get_or_insert_with(|| built.report.clone());
        crate::lower_built(built, o, weights)
    };
    // With `--dim` (`--shape input_ids=1,S --shape attention_mask=1,S --dim S=16,32,64,128`), one
    // graph per sequence length, in one blob.
    let converted = if convert.dims.is_empty() && convert.dim_shapes.is_empty() {
        crate::variants::no_pads(convert)?;
        crate::write_one(one(convert)?, convert)?
    } else {
        crate::variants::convert(convert, &mut one)?
    };
    let bind = bind.ok_or_else(|| ConvertError::internal("no graph was built"))?;
    Ok(FolderConverted { converted, bind })
}
