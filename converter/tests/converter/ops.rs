//! Op coverage against onnxruntime: the small models of `tests/models/ops/` (made by `make.py` there)
//! are converted, run through an ember-core `Session`, and compared with the goldens. Structural
//! checks pin what the layout and clean-up passes should produce.

use crate::common;

use common::golden::*;
use ember_convert::{convert, ConvertOptions, Converted};

const TOLERANCE: f32 = 1e-4;

/// Converts a case, runs it on its golden input, and checks its golden output within `TOLERANCE`.
fn check_case(case: &str) -> Converted {
    check_case_within(case, TOLERANCE)
}

#[test]
fn conv_variants() {
    let c = check_case("conv_variants");
    // Clip(0, 6) and the general Clip are fused; NCHW in and out costs one transpose each way.
    assert_eq!(
        op_names(&c),
        [
            "Transpose",
            "Conv2d",
            "Conv2d",
            "Conv2d(grouped)",
            "Conv2d(grouped)",
            "Conv2d",
            "Transpose"
        ]
    );
    assert!(c.report.ops.iter().any(|(n, _)| n == "c4+relu6"));
}

#[test]
fn pools() {
    check_case("pools");
}

#[test]
fn pool_ceil() {
    let c = check_case("pool_ceil");
    // ceil_mode is extra end padding on the existing kinds; count_include_pad=1 with explicit pads
    // (two of the pools) pads with zeros first.
    assert_op_count(&c, "MaxPool2d", 2);
    assert_op_count(&c, "AvgPool2d", 5);
    assert_op_count(&c, "Pad", 3);
}

#[test]
fn pool_dilations() {
    let c = check_case("pool_dilations");
    // No pooling kernel: one strided Slice per tap (4 + 6 + 4 + 6 + 9 + 3), folded by Binary ops.
    let ops = op_names(&c);
    assert!(
        !ops.iter().any(|o| o.contains("Pool")),
        "{:?}",
        c.report.ops
    );
    assert_op_count(&c, "Slice", 32);
}

#[test]
fn conv1d() {
    let c = check_case("conv1d");
    // 1-D convolutions run as 2-D ones over [N, C, 1, L], their Relus fused through the reshapes.
    assert_has_nodes(&c, &["c3+relu3", "c4+relu4"]);
    assert!(!op_names(&c).contains(&"Relu"), "{:?}", c.report.ops);
}

#[test]
fn gemm_variants() {
    let c = check_case("gemm_variants");
    // Transpose followed by Gemm(transA=1) cancels; [0, 2, 1] of [2, 1, 2] is a reshape.
    assert_op_count(&c, "Transpose", 1);
}

#[test]
fn layout_mix() {
    check_case("layout_mix");
}

#[test]
fn old_opset_forms() {
    let c = check_case("old_opset");
    // Dropout and Identity are gone; Softmax with axis 1 of rank 3 is reshaped around.
    assert_eq!(
        op_names(&c),
        ["Clip", "Pad", "Reshape", "Softmax", "Reshape", "Softmax"]
    );
}

#[test]
fn conv_output_keeps_onnx_layout() {
    let c = check_case("conv_output");
    assert_eq!(c.report.outputs, vec![("y".to_string(), vec![1, 3, 3, 3])]);
}

#[test]
fn single_channel_input_transpose_is_a_free_reshape() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/models/digits/model.onnx"
    ))
    .unwrap();
    let c = convert(&bytes, &ConvertOptions::default()).unwrap();
    assert_eq!(c.report.ops[0], ("input.to_nhwc".to_string(), "Reshape"));
    let blob = ember_core::AlignedBuf::from_bytes(&c.blob);
    let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
    let op = model.op(0).unwrap();
    let (x, y) = (
        model.tensor(op.inputs[0] as usize).unwrap(),
        model.tensor(op.output as usize).unwrap(),
    );
    assert_eq!(x.storage, y.storage, "the reshape aliases the graph input");
}

#[test]
fn math_breadth() {
    let c = check_case_within("math_breadth", 1e-5);
    let ops = op_names(&c);
    // Pow by 2 became a Mul, by 0.5 a Sqrt; the other two stay Pow.
    assert_eq!(ops.iter().filter(|&&o| o == "Pow").count(), 2, "{ops:?}");
    assert_eq!(ops.iter().filter(|&&o| o == "Sqrt").count(), 2, "{ops:?}");
    let wanted = ["PRelu", "Mod", "Min", "Max", "Gelu", "Gelu(tanh)", "Round"];
    for op in wanted {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
}

#[test]
fn fold_affine() {
    let c = check_case("fold_affine");
    // The scales and shifts fold into the convolutions around them, the written-out HardSwishes become
    // one op each; the scale before the padded depthwise convolution and the Mul whose input is also
    // read by the residual Add stay.
    assert_ops(
        &c,
        &[
            "Transpose",
            "Conv2d",
            "HardSwish",
            "Conv2d",
            "Mul",
            "Conv2d(grouped)",
            "HardSwish",
            "Conv2d",
            "Mul",
            "Add",
            "Transpose",
        ],
    );
    assert_has_nodes(
        &c,
        &["c1+scale1+shift1", "scale2+shift2+c2+sub3+div3+relu3"],
    );
}

#[test]
fn scaled_hard_swish() {
    let c = check_case("scaled_hard_swish");
    // The scale and shift after each HardSwish before a padded convolution become part of it; the
    // HardSwish whose output the residual Add also reads keeps its Mul.
    assert_ops(
        &c,
        &[
            "Transpose",
            "Conv2d",
            "ScaledHardSwish",
            "Conv2d(grouped)",
            "ScaledHardSwish",
            "Conv2d",
            "HardSwish",
            "Mul",
            "Add",
            "Transpose",
        ],
    );
    assert_has_nodes(&c, &["hswish1+scale1+shift1"]);
}

#[test]
fn rnn_lstm_gru() {
    // A bidirectional LSTM and a reverse GRU (linear_before_reset=1) with initial states: one Rnn
    // kernel each, every output a slice of its states.
    let c = check_case_within("rnn", 1e-5);
    assert_op_count(&c, "Rnn", 2);
}
