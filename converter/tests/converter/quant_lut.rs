//! Element-wise functions between int8 tensors as lookup tables (`QuantLut`): the QDQ models of
//! `tests/models/ops/lut_cases.py` (`DequantizeLinear -> <fn> -> QuantizeLinear` over every int8 input
//! value) against onnxruntime's int8 results, which that script also checks against numpy for HardSwish,
//! HardSigmoid, Sigmoid and LeakyRelu; and the post-training quantizer keeping the convolutions around
//! activations in int8.

use crate::common;

use common::golden::{convert_case, op_names, read_npy, run};

/// The cases of `lut_cases.py`, by file name.
const CASES: &[&str] = &[
    "hard_swish",
    "hard_sigmoid",
    "sigmoid",
    "tanh",
    "leaky_relu",
    "elu",
    "gelu",
    "swish",
    "mish",
    "softplus",
    "exp",
];

/// Each function becomes one lookup between the input's Quantize and the output's Dequantize, and
/// gives onnxruntime's int8 value for every one of the 256 inputs (the outputs are those values
/// dequantized, equal exactly when the int8 values are).
#[test]
fn every_function_is_one_lookup_with_onnxruntime_values_exactly() {
    for case in CASES {
        let case = format!("lut_{case}");
        let c = convert_case(&case);
        assert_eq!(
            op_names(&c),
            ["Quantize", "QuantLut", "Dequantize"],
            "{case}: {:?}",
            c.report.ops
        );
        let (_, x) = read_npy(&format!("{case}.x.npy"));
        let (_, y) = read_npy(&format!("{case}.y.npy"));
        let got = run(&c, &x);
        assert_eq!(got.len(), 256, "{case}");
        let differ: Vec<(f32, f32, f32)> = x
            .iter()
            .zip(got.iter().zip(&y))
            .filter(|(_, (a, b))| a.to_bits() != b.to_bits())
            .map(|(&x, (&a, &b))| (x, a, b))
            .collect();
        assert!(
            differ.is_empty(),
            "{case}: {} of 256 values differ (x, ember, onnxruntime): {differ:?}",
            differ.len()
        );
    }
}

/// The blob's table is the function's: LeakyRelu's alpha (0.2, not ONNX's default 0.01) reaches it,
/// which the golden shows at every negative input.
#[test]
fn leaky_relu_alpha_reaches_the_table() {
    let c = convert_case("lut_leaky_relu");
    let (_, x) = read_npy("lut_leaky_relu.x.npy");
    let got = run(&c, &x);
    // Input -1.0 (q = 10 with scale 0.05, zero point 30): 0.2 * -1.0 = -0.2, output scale 0.03.
    let i = x.iter().position(|&v| v == -1.0).expect("x holds -1.0");
    assert!((got[i] - (-0.2)).abs() <= 0.015, "{}", got[i]);
}

/// Conv -> HardSwish -> Conv -> Sigmoid -> Conv -> LeakyRelu quantized from calibration data: every
/// op runs on int8 data (the activations as lookups), with one Quantize and one Dequantize at the
/// edges, and the int8 model stays close to the float one.
#[test]
fn post_training_quantization_keeps_activations_in_int8() {
    let (_, summary, c) = common::golden::post_training_quantized("lut_ptq");
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);
    let ops = op_names(&c);
    let count = |op: &str| ops.iter().filter(|&&o| o == op).count();
    assert_eq!(count("QuantConv2d"), 3, "{:?}", c.report.ops);
    assert_eq!(count("QuantLut"), 3, "{:?}", c.report.ops);
    assert_eq!(count("Quantize"), 1, "{:?}", c.report.ops);
    assert_eq!(count("Dequantize"), 1, "{:?}", c.report.ops);
    let float = ["Conv2d", "Unary"];
    assert!(!ops.iter().any(|o| float.contains(o)), "{:?}", c.report.ops);
    let (_, x) = read_npy("lut_ptq.x.npy");
    let (_, y) = read_npy("lut_ptq.y.npy");
    let got = run(&c, &x);
    let max = y.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = got
        .iter()
        .zip(&y)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    // A few output steps of int8 (the output spans about 2 * max over 255 steps).
    assert!(
        diff <= 0.1 * max,
        "max |int8 - float| {diff}, output max {max}"
    );
}

/// A blob whose lookup table is not 256 int8 weight bytes is a parse error naming the problem, never a
/// panic or a read past the table.
#[test]
fn a_corrupt_table_is_a_parse_error_naming_it() {
    use ember_core::{AlignedBuf, DType, Model, OpKind};
    use ember_testkit::model::{single_op_blob, typed_input, weight, weight_i8};
    let x = || typed_input(&[1, 4], vec![-128.0, -1.0, 0.0, 127.0], DType::I8);
    let parse = |table: ember_testkit::model::Operand| {
        let blob = single_op_blob(OpKind::QuantLut, &[x(), table], &[1, 4], DType::I8);
        let bytes = AlignedBuf::from_bytes(blob.as_bytes());
        Model::parse(bytes.as_bytes())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let table: Vec<i8> = (0..=255u8).map(|v| v as i8).collect();
    assert_eq!(parse(weight_i8(&[256], table.clone())), Ok(()));
    let err = |t| parse(t).expect_err("the blob must not parse");
    let e = err(weight_i8(&[255], table[..255].to_vec()));
    assert!(e.contains("lookup table is not 256 entries long"), "{e}");
    let e = err(weight_i8(&[16, 16], table.clone()));
    assert!(e.contains("lookup table is not 256 entries long"), "{e}");
    let e = err(weight(&[256], vec![0.0; 256]));
    assert!(e.contains("lookup table must be an I8 tensor"), "{e}");
    let e = err(typed_input(&[256], vec![0.0; 256], DType::I8));
    assert!(e.contains("lookup table must be a weight tensor"), "{e}");
}
