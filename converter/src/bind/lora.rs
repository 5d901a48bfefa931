//! LoRA adapters in PEFT's format, merged into a graph's weights: `W + scale * (alpha / r) * B @ A`.
//!
//! PEFT saves `base_model.model.<module>.lora_A.weight` (`[r, in]`, or `[r, in, kh, kw]` for a
//! convolution) and `lora_B.weight` (`[out, r]`, or `[out, r, 1, 1]`) in `adapter_model.safetensors`,
//! with `r`, `lora_alpha`, `target_modules` (and optionally `use_rslora`, `rank_pattern`,
//! `alpha_pattern`) in `adapter_config.json` beside it. The module's weight is the initializer bound
//! to (or named) `<module>.weight`.
//!
//! Orientation: `B @ A` is `[out, in]`, PyTorch's Linear layout. Where the weight is stored the other
//! way round is read off the node that consumes it, never guessed from the shape (a square weight
//! would be ambiguous): a `Gemm` input B with `transB=1` and a `Conv` weight take `B @ A` as is; a
//! `Gemm` with `transB=0` and a `MatMul` (`x @ W`, W `[in, out]`) take its transpose. A weight no such
//! node uses directly (a `Transpose` in front of a MatMul) must have PyTorch's `[out, in, ...]` shape
//! and is taken so. PEFT's own
//! `fan_in_fan_out` describes the PyTorch module (GPT-2's `Conv1D`), not the ONNX graph, so it does
//! not enter the rule.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value as Json;

use crate::weights::{Checkpoint, Tensor};
use crate::ConvertError;

fn err(msg: impl Into<String>) -> ConvertError {
    ConvertError::bind(msg)
}

/// The part of `adapter_config.json` that the merge uses.
#[derive(Clone, Debug)]
pub struct LoraConfig {
    /// Default rank.
    pub r: usize,
    /// Default alpha.
    pub alpha: f64,
    /// `target_modules`: names matched as a suffix of the module path, or one regex matched against
    /// the whole path; `None` when the config has none.
    pub target_modules: Option<TargetModules>,
    /// Scale by `alpha / sqrt(r)` instead of `alpha / r`.
    pub use_rslora: bool,
    /// Per-module ranks and alphas (`rank_pattern`, `alpha_pattern`): (pattern, value).
    pub rank_pattern: Vec<(Regex, usize)>,
    /// See [`LoraConfig::rank_pattern`].
    pub alpha_pattern: Vec<(Regex, f64)>,
}

/// PEFT's `target_modules`.
#[derive(Clone, Debug)]
pub enum TargetModules {
    /// Module names: a module matches when its path is one of them or ends with `.` and one.
    Names(Vec<String>),
    /// A regex the whole module path must match.
    Regex(Regex),
}

/// PEFT's pattern-key rule: `pattern` matches a module path that is it or ends with `.` and it.
fn pattern(p: &str) -> Result<Regex, ConvertError> {
    Regex::new(&format!(r"^(?:.*\.)?(?:{p})$"))
        .map_err(|e| err(format!("adapter_config.json: pattern {p:?}: {e}")))
}

impl LoraConfig {
    /// Reads `adapter_config.json`.
    pub fn from_json(text: &str) -> Result<LoraConfig, ConvertError> {
        let bad = |why: &str| err(format!("adapter_config.json: {why}"));
        let v: Json =
            serde_json::from_str(text).map_err(|e| bad(&format!("not valid JSON: {e}")))?;
        if let Some(t) = v.get("peft_type").and_then(Json::as_str) {
            if t != "LORA" {
                return Err(bad(&format!(
                    "peft_type {t}; Ember merges LORA adapters only"
                )));
            }
        }
        if v.get("use_dora").and_then(Json::as_bool) == Some(true) {
            return Err(bad(
                "use_dora: DoRA rescales each column by a learned magnitude, which this merge does \
                 not do",
            ));
        }
        let r = v
            .get("r")
            .and_then(Json::as_u64)
            .filter(|&r| r > 0)
            .ok_or_else(|| bad("no positive integer \"r\""))? as usize;
        let alpha = v
            .get("lora_alpha")
            .and_then(Json::as_f64)
            .ok_or_else(|| bad("no number \"lora_alpha\""))?;
        let target_modules = match v.get("target_modules") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(TargetModules::Regex(
                Regex::new(&format!("^(?:{s})$"))
                    .map_err(|e| bad(&format!("target_modules regex: {e}")))?,
            )),
            Some(Json::Array(a)) => Some(TargetModules::Names(
                a.iter()
                    .map(|x| x.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| bad("target_modules holds a non-string"))?,
            )),
            Some(_) => return Err(bad("target_modules is neither a list nor a string")),
        };
        let table = |key: &str| -> Result<Vec<(Regex, Json)>, ConvertError> {
            match v.get(key) {
                None | Some(Json::Null) => Ok(Vec::new()),
                Some(Json::Object(m)) => m
                    .iter()
                    .map(|(k, x)| Ok((pattern(k)?, x.clone())))
                    .collect(),
                Some(_) => Err(bad(&format!("{key} is not an object"))),
            }
        };
        let rank_pattern = table("rank_pattern")?
            .into_iter()
            .map(|(re, x)| {
                x.as_u64()
                    .filter(|&r| r > 0)
                    .map(|r| (re, r as usize))
                    .ok_or_else(|| bad("rank_pattern holds a value that is not a positive integer"))
            })
            .collect::<Result<_, _>>()?;
        let alpha_pattern = table("alpha_pattern")?
            .into_iter()
            .map(|(re, x)| {
                x.as_f64()
                    .map(|a| (re, a))
                    .ok_or_else(|| bad("alpha_pattern holds a value that is not a number"))
            })
            .collect::<Result<_, _>>()?;
        Ok(LoraConfig {
            r,
            alpha,
            target_modules,
            use_rslora: v.get("use_rslora").and_then(Json::as_bool).unwrap_or(false),
            rank_pattern,
            alpha_pattern,
        })
    }

    /// Rank and alpha of `module`.
    fn rank_alpha(&self, module: &str) -> (usize, f64) {
        let r = self
            .rank_pattern
            .iter()
            .find(|(re, _)| re.is_match(module))
            .map_or(self.r, |&(_, r)| r);
        let a = self
            .alpha_pattern
            .iter()
            .find(|(re, _)| re.is_match(module))
            .map_or(self.alpha, |&(_, a)| a);
        (r, a)
    }

    fn targets(&self, module: &str) -> bool {
        match &self.target_modules {
            None => true,
            Some(TargetModules::Regex(re)) => re.is_match(module),
            Some(TargetModules::Names(names)) => names
                .iter()
                .any(|t| module == t || module.ends_with(&format!(".{t}"))),
        }
    }
}

/// One adapted module: its path and its two factors.
#[derive(Clone, Debug)]
pub struct LoraModule<'a> {
    /// The module path (`encoder.layer.0.attention.self.query`).
    pub module: String,
    /// `[r, in, ...]`.
    pub a: Tensor<'a>,
    /// `[out, r, ...]`.
    pub b: Tensor<'a>,
    /// `scale * alpha / r` (or `/ sqrt(r)`).
    pub factor: f64,
    /// The rank.
    pub rank: usize,
}

/// A LoRA adapter ready to merge.
#[derive(Clone, Debug)]
pub struct Lora<'a> {
    /// The adapted modules, by path.
    pub modules: Vec<LoraModule<'a>>,
    /// The `--lora-scale` it was made with.
    pub scale: f64,
}

impl<'a> Lora<'a> {
    /// Pairs the adapter's `lora_A`/`lora_B` tensors by module and checks them against `config`;
    /// `scale` multiplies every update (`--lora-scale`, 1 by default).
    pub fn new(
        tensors: &Checkpoint<'a>,
        config: &LoraConfig,
        scale: f64,
    ) -> Result<Lora<'a>, ConvertError> {
        let mut pairs: BTreeMap<String, (Option<Tensor<'a>>, Option<Tensor<'a>>)> = BTreeMap::new();
        for (name, t) in tensors.iter() {
            let path = name.strip_prefix("base_model.model.").unwrap_or(name);
            let split = |which: &str| -> Option<String> {
                let at = path.find(&format!(".{which}."))?;
                let rest = &path[at + which.len() + 2..];
                // `lora_A.weight`, or `lora_A.<adapter name>.weight` from an in-memory state dict.
                (rest == "weight"
                    || rest.ends_with(".weight") && !rest[..rest.len() - 7].contains('.'))
                .then(|| path[..at].to_string())
            };
            if let Some(m) = split("lora_A") {
                pairs.entry(m).or_default().0 = Some(t.clone());
            } else if let Some(m) = split("lora_B") {
                pairs.entry(m).or_default().1 = Some(t.clone());
            } else {
                return Err(err(format!(
                    "adapter tensor \"{name}\" is not a lora_A or lora_B weight; Ember merges plain \
                     LoRA on Linear and Conv layers (not DoRA magnitudes, LoRA embeddings or \
                     modules_to_save)"
                )));
            }
        }
        if pairs.is_empty() {
            return Err(err("the adapter holds no lora_A/lora_B weights"));
        }
        let mut modules = Vec::new();
        for (module, (a, b)) in pairs {
            let (Some(a), Some(b)) = (a, b) else {
                return Err(err(format!(
                    "module \"{module}\" has only one of lora_A and lora_B"
                )));
            };
            if !config.targets(&module) {
                return Err(err(format!(
                    "module \"{module}\" has LoRA weights, but adapter_config.json's \
                     target_modules does not name it"
                )));
            }
            let (r, alpha) = config.rank_alpha(&module);
            let ra = a.shape().first().copied().unwrap_or(0);
            let rb = b.shape().get(1).copied().unwrap_or(0);
            let b_rest: usize = b.shape().iter().skip(2).product();
            if ra != r || rb != r || b_rest != 1 || a.shape().len() < 2 {
                return Err(err(format!(
                    "module \"{module}\": lora_A {:?} and lora_B {:?} do not have rank {r} (A \
                     [r, in, ...], B [out, r])",
                    a.shape(),
                    b.shape()
                )));
            }
            let denom = if config.use_rslora {
                (r as f64).sqrt()
            } else {
                r as f64
            };
            modules.push(LoraModule {
                module,
                a,
                b,
                factor: scale * alpha / denom,
                rank: r,
            });
        }
        Ok(Lora { modules, scale })
    }
}

impl LoraModule<'_> {
    /// `factor * B @ A` as `[out, in * kh * kw]`, row-major, and its (out, in) dims.
    pub fn delta(&self) -> Result<(Vec<f64>, usize, usize), ConvertError> {
        let a = self.a.to_f64()?;
        let b = self.b.to_f64()?;
        let (r, out) = (self.rank, self.b.shape()[0]);
        let k = a.len() / r;
        let mut d = vec![0f64; out * k];
        for o in 0..out {
            for j in 0..r {
                let s = self.factor * b[o * r + j];
                for (x, &y) in d[o * k..(o + 1) * k].iter_mut().zip(&a[j * k..(j + 1) * k]) {
                    *x += s * y;
                }
            }
        }
        Ok((d, out, k))
    }
}
