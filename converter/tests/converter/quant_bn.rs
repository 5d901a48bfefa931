//! The post-training quantizer folds each BatchNormalization into the Conv or Gemm before it before it
//! quantizes the weights, so a layer -> BatchNormalization pair becomes one int8 layer: the models of
//! `tests/models/ops/ptq_bn_cases.py`, against onnxruntime's float output of the unfolded models.

use crate::common;

use common::golden::{op_names, read_npy, run};
use ember_convert::quantize::{activation_params, QdqSummary};
use ember_convert::Converted;

/// Quantizes `<case>.onnx` from its calibration samples and checks its first sample against
/// onnxruntime's float output: at most `steps` output quantization steps apart.
fn quantize_case(case: &str, steps: f32) -> (QdqSummary, Converted) {
    let (ranges, summary, c) = common::golden::post_training_quantized(case);
    let (_, x) = read_npy(&format!("{case}.x.npy"));
    let (_, y) = read_npy(&format!("{case}.y.npy"));
    let got = run(&c, &x);
    assert_eq!(got.len(), y.len(), "{case}");
    let (lo, hi) = ranges["y"];
    let (step, _) = activation_params(lo, hi);
    let diff = got
        .iter()
        .zip(&y)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        diff <= steps * step,
        "{case}: max |int8 - float| {diff}, {} output steps of {step}",
        diff / step
    );
    (summary, c)
}

/// Asserts that `c` runs exactly `want` (in any order); a failure lists every node with its op.
fn assert_op_counts(c: &Converted, want: &[(&str, usize)]) {
    let ops = op_names(c);
    let count = |op: &str| ops.iter().filter(|&&o| o == op).count();
    for &(op, n) in want {
        assert_eq!(count(op), n, "{op}: {:?}", c.report.ops);
    }
    let total: usize = want.iter().map(|(_, n)| n).sum();
    assert_eq!(ops.len(), total, "{:?}", c.report.ops);
}

/// Conv -> BatchNormalization -> Relu -> Conv -> BatchNormalization: both normalizations are folded,
/// both convolutions run in int8 with int32 biases (no float op left, one Quantize and one Dequantize
/// at the edges), and the output is within a few output steps of onnxruntime's float output (the first
/// convolution's int8 rounding carries into the second).
#[test]
fn batch_norm_after_conv_is_folded_before_the_weights_are_quantized() {
    let (summary, c) = quantize_case("ptq_conv_bn", 2.0);
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);
    assert_eq!(summary.batch_norms_folded, 2, "{summary:?}");
    assert_eq!((summary.weights, summary.biases), (2, 2), "{summary:?}");
    // The input, the first normalization's output (its Relu fused) and the output.
    assert_eq!(summary.activations, 3, "{summary:?}");
    // The layout pass runs the convolutions NHWC: one transpose on the int8 input, one on the output.
    assert_op_counts(
        &c,
        &[
            ("Quantize", 1),
            ("Transpose", 2),
            ("QuantConv2d", 2),
            ("Dequantize", 1),
        ],
    );
}

/// The same for Gemm, with the output channels on the weights' second axis (`transB=0`) and then on
/// their first (`transB=1`, no bias of its own): both normalizations folded, the output within a few
/// steps of onnxruntime's. The `transB=0` Gemm itself stays a float FullyConnected, for a reason of its
/// own: the Gemm importer takes B as fully connected weights (transposing them) only when B is a float
/// constant, and a DequantizeLinear output is not one, so the QDQ pass sees a MatMul it leaves float
/// (and so it would without the normalization).
#[test]
fn batch_norm_after_gemm_is_folded_before_the_weights_are_quantized() {
    let (summary, c) = quantize_case("ptq_gemm_bn", 2.0);
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);
    assert_eq!(summary.batch_norms_folded, 2, "{summary:?}");
    assert_eq!((summary.weights, summary.biases), (2, 2), "{summary:?}");
    assert_op_counts(
        &c,
        &[
            ("Quantize", 2),
            ("Dequantize", 2),
            ("FullyConnected", 1),
            ("QuantFullyConnected", 1),
        ],
    );
}
