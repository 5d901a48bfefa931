//! Post-training int8 quantization: calibrate a float ONNX model on sample inputs, then rewrite it in
//! the QDQ form that `onnxruntime.quantization.quantize_static` writes (QuantizeLinear/DequantizeLinear
//! pairs around the float ops), so the ordinary import path turns it into Ember's int8 ops.
//!
//! - **Calibration** ([`calibrate`]): the model is converted once more with every quantizable tensor as an
//!   extra graph output, run by Ember's float runtime on each sample, and each tensor's range is kept:
//!   min/max, or a percentile of the values (robust to outliers).
//! - **Activations**: per-tensor asymmetric int8 (`scale = (max - min) / 255`, the range widened to hold
//!   0, zero point in -128..=127). Softmax outputs take TFLite's fixed 1/256 and -128. Activations
//!   (HardSwish, Sigmoid, LeakyRelu, ...) get pairs too: between two int8 tensors they run as a lookup
//!   table. A tensor read only by a Relu, Clip or BatchNormalization gets no pair of its own: the
//!   activation is fused into the producer, the normalization folded, and the pair goes after them.
//! - **BatchNormalization** after a Conv or Gemm is folded into that layer's float weights and bias
//!   before they are quantized (`batch_norm`), with the arithmetic of the import pass
//!   `fold_batch_norm`: folded after quantization, the layer would stay float.
//! - **Weights** of Conv, Gemm and MatMul (initializers): symmetric int8 per output channel
//!   (`scale = max|w| / 127`, values in -127..=127). **Biases** of Conv and Gemm: int32 with scale
//!   `x_scale * w_scale[c]`, as the TFLite spec has it.
//!
//! Weight-only int8 ([`weight_only`], `--quantize int8-weights`) needs no calibration: it quantizes the
//! weights of fully connected layers and embedding tables the same way and keeps activations f32.

mod batch_norm;
mod calibrate;
mod qdq;
mod tensors;
pub mod weight_only;

pub use calibrate::{calibrate, Calibration, Ranges};
pub use qdq::{quantize_qdq, QdqSummary};
pub use weight_only::{weight_only_int8, WeightOnlySummary};

use crate::ConvertError;

/// ONNX ops whose float output gets a Quantize/Dequantize pair.
///
/// The activations among them (Sigmoid to ThresholdedRelu, any element-wise function of one input) run
/// on int8 data as a lookup table (`QuantLut`) once their input is quantized too, so that the
/// convolutions on either side of one stay int8. The elementary functions (Exp, Log, Erf, ...) are left
/// out: they are mostly steps of a decomposed op (a softmax, a Gelu) whose other steps stay float, where a
/// pair would only round.
pub(crate) const QUANTIZED_OUTPUTS: &[&str] = &[
    "Add",
    "AveragePool",
    "BatchNormalization",
    "Celu",
    "Clip",
    "Concat",
    "Conv",
    "Elu",
    "Flatten",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "HardSigmoid",
    "HardSwish",
    "LeakyRelu",
    "MatMul",
    "MaxPool",
    "Mish",
    "Mul",
    "Relu",
    "Reshape",
    "Selu",
    "Sigmoid",
    "Softmax",
    "Softplus",
    "Softsign",
    "Squeeze",
    "Swish",
    "Tanh",
    "ThresholdedRelu",
    "Transpose",
    "Unsqueeze",
];

/// Ops that are fused into (or folded with) the op producing their input: a tensor read only by one of
/// these is not quantized itself.
pub(crate) const FUSED_CONSUMERS: &[&str] = &["BatchNormalization", "Clip", "Relu"];

/// Scale and zero point of an asymmetric int8 quantization of values in `min..=max`. The range is
/// widened to contain 0 (so zero is exact) and to at least 1e-8 wide.
pub fn activation_params(min: f32, max: f32) -> (f32, i8) {
    let (lo, hi) = (min.min(0.0), max.max(0.0));
    let scale = ((f64::from(hi) - f64::from(lo)) / 255.0).max(1e-8);
    let zp = (-128.0 - f64::from(lo) / scale)
        .round()
        .clamp(-128.0, 127.0);
    (scale as f32, zp as i8)
}

/// Symmetric per-channel int8 quantization of `w` whose channel `c` is every element with index
/// `(i / inner) % channels == c` (row-major, the channel axis of size `channels` with `inner` elements
/// after it). Returns the int8 values and one scale per channel (an all-zero channel gets scale 1).
pub fn quantize_weights(w: &[f32], channels: usize, inner: usize) -> (Vec<i8>, Vec<f32>) {
    let mut max = vec![0f32; channels];
    for (i, &v) in w.iter().enumerate() {
        let c = (i / inner) % channels;
        max[c] = max[c].max(v.abs());
    }
    let scales: Vec<f32> = max
        .iter()
        .map(|&m| if m > 0.0 { m / 127.0 } else { 1.0 })
        .collect();
    let q = w
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let s = scales[(i / inner) % channels];
            (f64::from(v) / f64::from(s)).round().clamp(-127.0, 127.0) as i8
        })
        .collect();
    (q, scales)
}

/// How the int8 model agrees with the float one on a set of samples (their first output).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Agreement {
    /// Samples compared.
    pub samples: usize,
    /// Samples whose top-1 (largest element of the output's last axis, per row) is the same in both.
    pub top1_same: usize,
    /// Rows compared for top-1 (samples times rows per sample).
    pub rows: usize,
    /// Largest absolute difference of any output element.
    pub max_abs_diff: f32,
    /// Mean absolute difference over all output elements.
    pub mean_abs_diff: f32,
    /// Cosine similarity of all the float outputs with all the int8 ones (1 when they point the same
    /// way; the measure for outputs without a class axis, like a detector's probability map).
    pub cosine: f64,
}

/// Runs both blobs on every sample (as [`calibrate`] takes them) and compares their first outputs.
pub fn agreement(
    float_blob: &[u8],
    int8_blob: &[u8],
    samples: &[Vec<Vec<f32>>],
) -> Result<Agreement, ConvertError> {
    let run_all = |blob: &[u8]| -> Result<(Vec<Vec<f32>>, usize), ConvertError> {
        let aligned = ember_core::AlignedBuf::from_bytes(blob);
        let m = ember_core::Model::parse(aligned.as_bytes())
            .map_err(|e| ConvertError::internal(format!("blob does not parse: {e}")))?;
        let mut arena = ember_core::AlignedBuf::zeroed(m.arena_bytes());
        let mut s = ember_core::Session::new(&m, arena.as_mut_bytes())
            .map_err(|e| ConvertError::internal(format!("session: {e}")))?;
        let mut outs = Vec::with_capacity(samples.len());
        let mut row = 1;
        for sample in samples {
            for (i, values) in sample.iter().enumerate() {
                s.input(i)
                    .and_then(|mut t| t.write_f32(values))
                    .map_err(|e| model_err(format!("sample input {i}: {e}")))?;
            }
            s.run()
                .map_err(|e| ConvertError::internal(format!("run: {e}")))?;
            let out = s
                .output(0)
                .map_err(|e| ConvertError::internal(format!("output: {e}")))?;
            row = out.dims().last().map_or(1, |&d| d.max(1) as usize);
            let values = out
                .as_f32()
                .map_err(|e| ConvertError::internal(format!("output: {e}")))?;
            outs.push(values.to_vec());
        }
        Ok((outs, row))
    };
    let (a, row) = run_all(float_blob)?;
    let (b, _) = run_all(int8_blob)?;
    let argmax = |r: &[f32]| {
        r.iter()
            .enumerate()
            .fold((0, f32::NEG_INFINITY), |best, (i, &v)| {
                if v > best.1 {
                    (i, v)
                } else {
                    best
                }
            })
            .0
    };
    let mut ag = Agreement {
        samples: samples.len(),
        ..Agreement::default()
    };
    let (mut sum, mut n) = (0f64, 0usize);
    let (mut dot, mut xx, mut yy) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(&b) {
        for (rx, ry) in x.chunks(row).zip(y.chunks(row)) {
            ag.rows += 1;
            if argmax(rx) == argmax(ry) {
                ag.top1_same += 1;
            }
        }
        for (&u, &v) in x.iter().zip(y) {
            let d = (u - v).abs();
            ag.max_abs_diff = ag.max_abs_diff.max(d);
            sum += f64::from(d);
            n += 1;
            let (u, v) = (f64::from(u), f64::from(v));
            (dot, xx, yy) = (dot + u * v, xx + u * u, yy + v * v);
        }
    }
    ag.mean_abs_diff = (sum / n.max(1) as f64) as f32;
    ag.cosine = if xx == 0.0 && yy == 0.0 {
        1.0
    } else {
        dot / (xx.sqrt() * yy.sqrt()).max(f64::MIN_POSITIVE)
    };
    Ok(ag)
}

/// An error about the quantization of the model as a whole.
pub(crate) fn model_err(reason: impl Into<String>) -> ConvertError {
    ConvertError::Model {
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_params_cover_the_range_and_keep_zero_exact() {
        let (s, zp) = activation_params(-1.0, 3.0);
        assert!((s - 4.0 / 255.0).abs() < 1e-7);
        // Zero maps to the zero point exactly, and both ends are inside int8.
        assert_eq!(zp, -64);
        let q = |x: f32| (x / s).round() as i32 + i32::from(zp);
        assert_eq!(q(-1.0), -128);
        assert_eq!(q(3.0), 127);
        // A range that excludes zero is widened to include it.
        assert_eq!(activation_params(2.0, 5.0).1, -128);
        assert_eq!(activation_params(-5.0, -2.0).1, 127);
    }

    #[test]
    fn weights_are_symmetric_per_channel() {
        // Two channels on axis 0 of a [2, 3] tensor.
        let (q, s) = quantize_weights(&[1.0, -0.5, 0.25, 0.0, 2.0, -4.0], 2, 3);
        assert_eq!(s, [1.0 / 127.0, 4.0 / 127.0]);
        assert_eq!(q, [127, -64, 32, 0, 64, -127]);
        // Channels on the last axis of a [2, 2] tensor (inner 1).
        let (q, s) = quantize_weights(&[1.0, 2.0, -1.0, 0.0], 2, 1);
        assert_eq!(s, [1.0 / 127.0, 2.0 / 127.0]);
        assert_eq!(q, [127, 127, -127, 0]);
    }
}
