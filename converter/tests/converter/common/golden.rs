//! The op models of `tests/models/ops/` (made by `make.py` there, goldens from onnxruntime): read, convert,
//! run through an ember-core `Session`, and compare.

use std::path::PathBuf;

use ember_convert::{convert, ConvertOptions, Converted};
use ember_testkit::model;

/// `tests/models/ops/<file>`.
pub fn case_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/models/ops")
        .join(file)
}

/// A float32 `.npy` of the op models, as `(shape, data)`.
pub fn read_npy(file: &str) -> (Vec<usize>, Vec<f32>) {
    model::read_npy(&case_path(file))
}

/// Converts `<case>.onnx` with default options.
pub fn convert_case(case: &str) -> Converted {
    convert_case_with(case, &ConvertOptions::default())
}

/// Converts `<case>.onnx` with `opts`.
pub fn convert_case_with(case: &str, opts: &ConvertOptions) -> Converted {
    let bytes =
        std::fs::read(case_path(&format!("{case}.onnx"))).expect("model is in the repository");
    convert(&bytes, opts).unwrap_or_else(|e| panic!("{case}: {e}"))
}

/// Runs a converted model on one input and returns its first output.
pub fn run(converted: &Converted, x: &[f32]) -> Vec<f32> {
    model::run(&converted.blob, x)
}

/// [`check_case_within`] with `rtol` 1e-5, the tolerance of the array, reduction and normalization cases.
pub fn check_case(case: &str) -> Converted {
    check_case_within(case, 1e-5)
}

/// Asserts that `c` runs `op` exactly `n` times; a failure lists every node with its op.
pub fn assert_op_count(c: &Converted, op: &str, n: usize) {
    let count = op_names(c).iter().filter(|&&o| o == op).count();
    assert_eq!(count, n, "{op}: {:?}", c.report.ops);
}

/// Converts a case, runs it on its golden input, and checks its golden output: shapes equal, non-finite
/// values (NaN, infinities) at the same places and equal, finite ones within `rtol` of the output's
/// scale: `|ember - golden| <= rtol * max(1, max |golden|)`, the rule `tests/models/check_goldens.py`
/// states and explains (float32 results of two correct implementations differ by rounding, in
/// proportion to the values involved, not by a fixed amount).
pub fn check_case_within(case: &str, rtol: f32) -> Converted {
    check_converted(case, convert_case(case), rtol)
}

/// [`check_case_within`] on a case converted with `opts`.
pub fn check_case_with(case: &str, opts: &ConvertOptions, rtol: f32) -> Converted {
    check_converted(case, convert_case_with(case, opts), rtol)
}

fn check_converted(case: &str, converted: Converted, rtol: f32) -> Converted {
    let (xs, x) = read_npy(&format!("{case}.x.npy"));
    let (ys, y) = read_npy(&format!("{case}.y.npy"));
    assert_eq!(converted.report.inputs[0].1, xs, "{case}: input shape");
    assert_eq!(converted.report.outputs[0].1, ys, "{case}: output shape");
    let got = run(&converted, &x);
    assert_eq!(got.len(), y.len(), "{case}: output length");
    for (i, (a, b)) in got.iter().zip(&y).enumerate() {
        // `max` below would skip a NaN: non-finite values must match exactly.
        let same = a == b || (a.is_nan() && b.is_nan());
        assert!(
            a.is_finite() && b.is_finite() || same,
            "{case}: output {i}: {a} vs {b}"
        );
    }
    let diff = got
        .iter()
        .zip(&y)
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    let scale = y
        .iter()
        .filter(|v| v.is_finite())
        .fold(1.0f32, |m, v| m.max(v.abs()));
    let bound = rtol * scale;
    println!("{case}: max |ember - onnxruntime| = {diff:.3e} (bound {bound:.3e})");
    assert!(diff <= bound, "{case}: max abs diff {diff} > {bound:e}");
    converted
}

/// The Ember op of every lowered node, in order.
pub fn op_names(c: &Converted) -> Vec<&'static str> {
    c.report.ops.iter().map(|(_, op)| *op).collect()
}

/// The name of every lowered node (fused nodes read `conv+relu`), in order.
pub fn node_names(c: &Converted) -> Vec<&str> {
    c.report.ops.iter().map(|(n, _)| n.as_str()).collect()
}

/// Asserts the Ember ops of `c`, in order; a failure lists every node with its op.
pub fn assert_ops(c: &Converted, want: &[&str]) {
    assert_eq!(op_names(c), want, "{:?}", c.report.ops);
}

/// Asserts that `c` has a node of each of the names `want` (fused nodes read `conv+relu`); a failure
/// lists every node with its op.
#[track_caller]
pub fn assert_has_nodes(c: &Converted, want: &[&str]) {
    let names = node_names(c);
    for name in want {
        assert!(
            names.contains(name),
            "{name} missing from {:?}",
            c.report.ops
        );
    }
}

/// `<case>.onnx` calibrated (min/max) on the samples of `<case>.calibration.npy` (one per row of its
/// first axis), rewritten in QDQ form and converted: the ranges, the quantizer's summary and the blob.
pub fn post_training_quantized(
    case: &str,
) -> (
    ember_convert::quantize::Ranges,
    ember_convert::quantize::QdqSummary,
    Converted,
) {
    use ember_convert::quantize;
    let onnx = std::fs::read(case_path(&format!("{case}.onnx"))).unwrap();
    let (dims, calib) = read_npy(&format!("{case}.calibration.npy"));
    let sample = dims[1..].iter().product::<usize>();
    let samples: Vec<Vec<Vec<f32>>> = calib.chunks(sample).map(|c| vec![c.to_vec()]).collect();
    let ranges = min_max_ranges(&onnx, &samples);
    let (qdq, summary) = quantize::quantize_qdq(&onnx, &ranges).unwrap();
    let c = convert(&qdq, &ConvertOptions::default()).unwrap();
    (ranges, summary, c)
}

/// The min/max ranges of `onnx`'s values over `samples` (each a list of inputs), with default options.
pub fn min_max_ranges(onnx: &[u8], samples: &[Vec<Vec<f32>>]) -> ember_convert::quantize::Ranges {
    use ember_convert::quantize::{calibrate, Calibration};
    calibrate(
        onnx,
        &ConvertOptions::default(),
        samples,
        Calibration::MinMax,
        &mut |_, _| {},
    )
    .unwrap()
}
