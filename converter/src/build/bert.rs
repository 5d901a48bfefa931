//! The BERT family's encoder (BERT, MiniLM, and the sentence-transformers models built on them),
//! written with the [`Builder`], with Hugging Face's weight names (`embeddings.word_embeddings`,
//! `encoder.layer.N.attention.self.query`, ...) and the pooling and normalization sentence-transformers
//! adds.
//!
//! - Embeddings: token + absolute position (`0..seq`) + token type (all zero: type ids are not an
//!   input), then LayerNorm. The position and type rows are constants, summed at conversion time.
//! - Each layer, post-LN: self-attention with the mask as an additive bias on the scores
//!   (`(1 - mask) * f32::MIN`, as `transformers` does), `softmax((q / sqrt(d)) k^T + bias) v`, the output
//!   projection, residual, LayerNorm; then `dense -> act -> dense`, residual, LayerNorm.
//! - Head: the last hidden state, or a sentence embedding pooled over the mask (CLS token, max, mean,
//!   mean divided by `sqrt(length)`; several modes are concatenated in sentence-transformers' order),
//!   optionally L2-normalized (`x / max(|x|, 1e-12)`).

use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::reduce::ReduceOp;

use super::{Builder, Value};
use crate::ir::DType;
use crate::ConvertError;

/// The `config.json` fields the encoder needs.
#[derive(Clone, Debug, PartialEq)]
pub struct BertConfig {
    /// Rows of the token embedding table.
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads (they split `hidden_size`).
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// The feed-forward activation: GELU (erf, `"gelu"`), GELU's tanh approximation (`"gelu_new"`,
    /// `"gelu_pytorch_tanh"`), or ReLU.
    pub hidden_act: UnaryOp,
    /// Rows of the position table: the longest sequence.
    pub max_position_embeddings: usize,
    /// Epsilon of every LayerNorm.
    pub layer_norm_eps: f32,
}

impl BertConfig {
    /// Reads the fields from a parsed `config.json`; a field missing or of another type, or a value
    /// Ember does not implement (`hidden_act`, `position_embedding_type`), is an error naming it.
    pub fn from_json(config: &serde_json::Value) -> Result<Self, ConvertError> {
        let bad = |reason: String| ConvertError::Model {
            reason: format!("config.json: {reason}"),
        };
        let size = |key: &str| -> Result<usize, ConvertError> {
            match config.get(key).and_then(serde_json::Value::as_u64) {
                Some(v) if v > 0 => {
                    usize::try_from(v).map_err(|_| bad(format!("{key} is too large")))
                }
                Some(_) => Err(bad(format!("{key} must be positive"))),
                None => Err(bad(format!("{key} is missing or not a whole number"))),
            }
        };
        let act = config
            .get("hidden_act")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("gelu");
        let hidden_act = match act {
            "gelu" => UnaryOp::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => UnaryOp::GeluTanh,
            "relu" => UnaryOp::Relu,
            other => {
                return Err(bad(format!(
                    "hidden_act \"{other}\" is not implemented (Ember knows gelu, gelu_new, \
                     gelu_pytorch_tanh, gelu_fast, relu)"
                )))
            }
        };
        if let Some(p) = config
            .get("position_embedding_type")
            .and_then(serde_json::Value::as_str)
        {
            if p != "absolute" {
                return Err(bad(format!(
                    "position_embedding_type \"{p}\" is not implemented (only \"absolute\")"
                )));
            }
        }
        let eps = match config.get("layer_norm_eps") {
            None => 1e-12,
            Some(v) => v
                .as_f64()
                .ok_or_else(|| bad("layer_norm_eps is not a number".into()))?
                as f32,
        };
        let cfg = BertConfig {
            vocab_size: size("vocab_size")?,
            hidden_size: size("hidden_size")?,
            num_hidden_layers: size("num_hidden_layers")?,
            num_attention_heads: size("num_attention_heads")?,
            intermediate_size: size("intermediate_size")?,
            hidden_act,
            max_position_embeddings: size("max_position_embeddings")?,
            layer_norm_eps: eps,
        };
        if !cfg.hidden_size.is_multiple_of(cfg.num_attention_heads) {
            return Err(bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                cfg.hidden_size, cfg.num_attention_heads
            )));
        }
        Ok(cfg)
    }
}

/// How token states become one sentence embedding (sentence-transformers' `Pooling` modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// The first token's state (`[CLS]`).
    Cls,
    /// The largest value of each feature over the unmasked tokens.
    Max,
    /// The mean over the unmasked tokens.
    Mean,
    /// The sum over the unmasked tokens divided by the square root of their count.
    MeanSqrtLen,
}

/// What the encoder outputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// Pooling modes, concatenated in this order; empty for the last hidden state.
    pub pooling: Vec<Pooling>,
    /// L2-normalize the pooled embedding.
    pub normalize: bool,
}

/// The encoder's input layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// Sequences per run.
    pub batch: usize,
    /// Tokens per sequence (padded).
    pub seq_len: usize,
    /// Element type of `input_ids` and `attention_mask` (I32 or I64).
    pub ids: DType,
}

/// Builds the encoder: inputs `input_ids` and `attention_mask` (`[batch, seq_len]`), output
/// `sentence_embedding` `[batch, width]` with a pooling head, else `last_hidden_state`
/// `[batch, seq_len, hidden]`.
pub fn build(
    b: &mut Builder<'_, '_>,
    cfg: &BertConfig,
    io: Inputs,
    head: &Head,
) -> Result<(), ConvertError> {
    let (bs, s, h) = (io.batch, io.seq_len, cfg.hidden_size);
    let (heads, d) = (cfg.num_attention_heads, h / cfg.num_attention_heads);
    if !matches!(io.ids, DType::I32 | DType::I64) {
        return Err(ConvertError::Input {
            name: "input_ids".into(),
            reason: format!("token ids are INT32 or INT64, not {}", io.ids.name()),
        });
    }
    if s == 0 || bs == 0 || s > cfg.max_position_embeddings {
        return Err(ConvertError::Input {
            name: "input_ids".into(),
            reason: format!(
                "shape [{bs}, {s}]: the batch and the sequence must be at least 1, and the \
                 sequence at most max_position_embeddings ({})",
                cfg.max_position_embeddings
            ),
        });
    }
    let ids = b.input("input_ids", &[bs, s], io.ids);
    let mask = b.input("attention_mask", &[bs, s], io.ids);

    // Embeddings: the token rows at run time, the position and type rows as one constant.
    let e = "embeddings";
    let table = format!("{e}.word_embeddings");
    b.param_shaped(&table, &format!("{table}.weight"), &[cfg.vocab_size, h])?;
    let words = b.embedding(&table, ids)?;
    let pos_layer = format!("{e}.position_embeddings");
    let pos = b.param(&pos_layer, &format!("{pos_layer}.weight"))?;
    let pos = b.slice(&format!("{pos_layer}.first_{s}"), pos, 0, 0..s)?;
    let type_layer = format!("{e}.token_type_embeddings");
    let types = b.param(&type_layer, &format!("{type_layer}.weight"))?;
    let type0 = b.slice(&format!("{type_layer}.row_0"), types, 0, 0..1)?;
    let fixed = b.add(&format!("{e}.position_and_type"), pos, type0)?;
    let x = b.add(&format!("{e}.sum"), words, fixed)?;
    let mut x = b.layer_norm(&format!("{e}.LayerNorm"), x, cfg.layer_norm_eps)?;

    // The mask as an additive bias on the attention scores, [batch, 1, 1, seq].
    let maskf = b.cast("attention_mask.float", mask, DType::F32)?;
    let one = b.scalar("one", 1.0);
    let masked = b.sub("attention_mask.inverted", one, maskf)?;
    let lowest = b.scalar("lowest", f32::MIN);
    let bias = b.mul("attention_mask.bias", masked, lowest)?;
    let bias = b.reshape("attention_mask.bias.4d", bias, &[bs, 1, 1, s])?;
    let scale = b.scalar("attention.scale", 1.0 / (d as f32).sqrt());

    for l in 0..cfg.num_hidden_layers {
        let p = format!("encoder.layer.{l}");
        let a = format!("{p}.attention.self");
        let split = |b: &mut Builder<'_, '_>, name: &str, v: Value, perm: &[usize]| {
            let v = b.reshape(&format!("{name}.heads"), v, &[bs, s, heads, d])?;
            b.transpose(&format!("{name}.transposed"), v, perm)
        };
        let q = b.linear(&format!("{a}.query"), x)?;
        // Scaling the queries rather than the scores: the same product, and the `fold_affine` pass
        // folds it into the query projection's weights.
        let q = b.mul(&format!("{a}.query.scaled"), q, scale)?;
        let q = split(b, &format!("{a}.query"), q, &[0, 2, 1, 3])?;
        let k = b.linear(&format!("{a}.key"), x)?;
        let k = split(b, &format!("{a}.key"), k, &[0, 2, 3, 1])?;
        let v = b.linear(&format!("{a}.value"), x)?;
        let v = split(b, &format!("{a}.value"), v, &[0, 2, 1, 3])?;
        let scores = b.matmul(&format!("{a}.scores"), q, k)?;
        let scores = b.add(&format!("{a}.masked"), scores, bias)?;
        let probs = b.softmax(&format!("{a}.probs"), scores, -1)?;
        let ctx = b.matmul(&format!("{a}.context"), probs, v)?;
        let ctx = b.transpose(&format!("{a}.context.merged"), ctx, &[0, 2, 1, 3])?;
        let ctx = b.reshape(&format!("{a}.context.flat"), ctx, &[bs, s, h])?;
        let o = format!("{p}.attention.output");
        let y = b.linear(&format!("{o}.dense"), ctx)?;
        let y = b.add(&format!("{o}.residual"), y, x)?;
        x = b.layer_norm(&format!("{o}.LayerNorm"), y, cfg.layer_norm_eps)?;

        let f = b.linear(&format!("{p}.intermediate.dense"), x)?;
        let f = b.unary(&format!("{p}.intermediate.act"), f, cfg.hidden_act)?;
        let y = b.linear(&format!("{p}.output.dense"), f)?;
        let y = b.add(&format!("{p}.output.residual"), y, x)?;
        x = b.layer_norm(&format!("{p}.output.LayerNorm"), y, cfg.layer_norm_eps)?;
    }

    if head.pooling.is_empty() {
        b.output("last_hidden_state", x);
        return Ok(());
    }
    let m = b.reshape("pooling.mask", maskf, &[bs, s, 1])?;
    let mut parts = Vec::new();
    for mode in &head.pooling {
        parts.push(match mode {
            Pooling::Cls => {
                let first = b.slice("pooling.cls", x, 1, 0..1)?;
                b.reshape("pooling.cls.flat", first, &[bs, h])?
            }
            Pooling::Max => {
                // Masked tokens count as -1e9, as sentence-transformers sets them.
                let kept = b.mul("pooling.max.kept", x, m)?;
                let off = b.sub("pooling.max.off", one, m)?;
                let low = b.scalar("pooling.max.low", -1e9);
                let off = b.mul("pooling.max.filler", off, low)?;
                let filled = b.add("pooling.max.filled", kept, off)?;
                b.reduce("pooling.max", filled, ReduceOp::Max, &[1], false)?
            }
            Pooling::Mean | Pooling::MeanSqrtLen => {
                let name = if *mode == Pooling::Mean {
                    "pooling.mean"
                } else {
                    "pooling.mean_sqrt_len"
                };
                let kept = b.mul(&format!("{name}.kept"), x, m)?;
                let total = b.sum(&format!("{name}.sum"), kept, &[1], false)?;
                let count = b.sum(&format!("{name}.count"), m, &[1], false)?;
                let floor = b.scalar(&format!("{name}.floor"), 1e-9);
                let count = b.max(&format!("{name}.count.clamped"), count, floor)?;
                let count = if *mode == Pooling::MeanSqrtLen {
                    b.unary(&format!("{name}.sqrt"), count, UnaryOp::Sqrt)?
                } else {
                    count
                };
                b.div(name, total, count)?
            }
        });
    }
    let mut y = match parts.as_slice() {
        [one] => *one,
        _ => b.concat("pooling.concat", &parts, -1)?,
    };
    if head.normalize {
        let norm = b.reduce("normalize.norm", y, ReduceOp::L2, &[-1], true)?;
        let eps = b.scalar("normalize.eps", 1e-12);
        let norm = b.max("normalize.norm.clamped", norm, eps)?;
        y = b.div("normalize", y, norm)?;
    }
    b.output("sentence_embedding", y);
    Ok(())
}
