//! Reductions, normalizations and LogSoftmax against onnxruntime, within 1e-5: the `reduce_v13`,
//! `reduce_v18`, `norms`, `group_norm_v21`, `conv_bn`, `gemm_bn` and `log_softmax_v11` models of `tests/models/ops/`
//! (made by `make.py` there), converted and run through an ember-core `Session`. Structural checks pin
//! what the BatchNormalization folding and the layout pass should produce, and errors cover what is
//! not supported.

use crate::common;

use common::golden::*;
use common::{
    attr_i, attr_ints, convert_err, fixed, floats, ints, model, node, node1, one_node_model,
    unshaped,
};
use ember_convert::onnx::proto::{NodeProto, TensorProto};

#[test]
fn reductions_opset_13() {
    let c = check_case("reduce_v13");
    // Every reduction of the Conv's output runs on NHWC data: with kept dims (GlobalMaxPool, the
    // ReduceMean over C and W), and without (the mean over H and W gives [N, C], the sum over C
    // [N, H, W], the same in both layouts). So does the GlobalMaxPool of the input, whose NHWC copy
    // exists for the Conv: that copy is the only transpose (the reduced [N, 1, 1, C] outputs go back
    // to NCHW by a free reshape).
    assert_op_count(&c, "Transpose", 1);
}

#[test]
fn reductions_opset_18() {
    check_case("reduce_v18");
}

#[test]
fn normalizations() {
    let c = check_case("norms");
    let names = op_names(&c);
    assert!(names.contains(&"LayerNorm"), "{names:?}");
    assert!(names.contains(&"LogSoftmax"), "{names:?}");
    // bn1 and bn2 fold into their Convs; bn3, bn4, bn5 become a Mul and an Add each.
    let ops = &c.report.ops;
    assert!(ops.iter().any(|(n, _)| n == "c1+bn1+relu1"), "{ops:?}");
    assert!(ops.iter().any(|(n, _)| n == "c2+bn2+relu2"), "{ops:?}");
    for bn in ["bn3", "bn4", "bn5"] {
        assert!(
            ops.iter().any(|(n, o)| n == bn && *o == "Add"),
            "{bn}: {ops:?}"
        );
    }
}

#[test]
fn group_normalization_after_a_conv() {
    let c = check_case("group_norm_v21");
    let names = op_names(&c);
    assert!(names.contains(&"LayerNorm"), "{names:?}");
}

#[test]
fn conv_batch_norm_folds_into_one_conv() {
    let c = check_case("conv_bn");
    // Each BatchNormalization folds into its Conv, and the activation after it fuses in too.
    assert_eq!(
        op_names(&c),
        ["Transpose", "Conv2d", "Conv2d(grouped)", "Transpose"]
    );
    let names = node_names(&c);
    assert_eq!(names[1..3], ["conv+bn+relu6", "dw+bn_dw+relu"]);
}

#[test]
fn gemm_batch_norm_folds_into_one_fully_connected() {
    let c = check_case("gemm_bn");
    assert_eq!(op_names(&c), ["FullyConnected"]);
}

#[test]
fn log_softmax_before_opset_13_is_coerced() {
    let c = check_case("log_softmax_v11");
    assert_eq!(op_names(&c), ["Reshape", "LogSoftmax", "Reshape"]);
}

#[test]
fn layer_norm_stash_type_other_than_float_is_rejected() {
    // Mean and InvStdDev are computed (tests/layer_norm_outputs.rs), but only in f32.
    let ln = node(
        "LayerNormalization",
        "ln",
        &["x", "s"],
        &["y", "mean"],
        vec![attr_i("axis", -1), attr_i("stash_type", 11)],
    );
    let add = node1("Add", "add", &["y", "mean"], "z");
    let bytes = model(
        17,
        vec![ln, add],
        vec![fixed("x", &[2, 3])],
        vec![unshaped("z")],
        vec![floats("s", &[3], &[1.0, 2.0, 3.0])],
    );
    let msg = convert_err(&bytes);
    assert!(msg.contains("ln") && msg.contains("stash_type=11"), "{msg}");
}

/// The conversion error of reduction `r` over `x [2, 3]` at `opset`, with `initializers`.
fn reduce_err(opset: i64, r: NodeProto, initializers: Vec<TensorProto>) -> String {
    convert_err(&one_node_model(
        opset,
        r,
        vec![fixed("x", &[2, 3])],
        initializers,
    ))
}

#[test]
fn reduce_errors_name_the_problem() {
    let with_axes = |op: &str, name: &str, axes: &[i64]| {
        node(op, name, &["x"], &["y"], vec![attr_ints("axes", axes)])
    };
    let cases = [
        // Repeated axes.
        (
            13,
            node1("ReduceSum", "sum", &["x", "axes"], "y"),
            vec![ints("axes", &[1, -1])],
            "twice",
        ),
        // The axes attribute where the opset wants an input.
        (18, with_axes("ReduceMean", "mean", &[1]), vec![], "axes"),
        // Axes past the rank.
        (
            13,
            with_axes("ReduceMax", "max", &[2]),
            vec![],
            "out of range",
        ),
    ];
    for (opset, r, initializers, why) in cases {
        let name = r.name.clone();
        let msg = reduce_err(opset, r, initializers);
        assert!(msg.contains(&name) && msg.contains(why), "{msg}");
    }
}

#[test]
fn batch_norm_training_mode_is_rejected() {
    let bn = node(
        "BatchNormalization",
        "bn",
        &["x", "s", "b", "m", "v"],
        &["y"],
        vec![attr_i("training_mode", 1)],
    );
    let c = |n: &str| floats(n, &[2], &[1.0, 1.0]);
    let bytes = one_node_model(
        15,
        bn,
        vec![fixed("x", &[1, 2, 3, 3])],
        vec![c("s"), c("b"), c("m"), c("v")],
    );
    let msg = convert_err(&bytes);
    assert!(msg.contains("bn") && msg.contains("training_mode"), "{msg}");
}
