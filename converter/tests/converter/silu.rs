//! SiLU written out in element-wise ops (`x * sigmoid(x)`, the Mul's operands in either order), as
//! YOLO-class detectors export it, converts to one Swish op (one pass over the tensor instead of two);
//! a Sigmoid whose output has another reader stays as it is. Values against the definition in f64.

use crate::common;

use common::{fixed, node1, unshaped};
use ember_convert::{convert, ConvertOptions};
use ember_core::ops::math::unary::UnaryOp;
use ember_core::{AlignedBuf, Model, OpKind};

/// 40 values from -20 to 19, and the blob's output for them.
fn run(onnx: &[u8]) -> (usize, Option<OpKind>, Vec<f32>, Vec<f32>) {
    let blob = convert(onnx, &ConvertOptions::default()).unwrap().blob;
    let x: Vec<f32> = (0..40).map(|i| i as f32 - 20.0 + 0.37).collect();
    let y = ember_testkit::model::run(&blob, &x);
    let blob = AlignedBuf::from_bytes(&blob);
    let model = Model::parse(blob.as_bytes()).unwrap();
    (model.op_count(), model.op(0).map(|o| o.kind), x, y)
}

/// `x * sigmoid(x)` in f64, to within 4 f32 steps of the result (the kernels' bound is 3).
fn assert_silu(x: &[f32], y: &[f32]) {
    for (&v, &got) in x.iter().zip(y) {
        let want = f64::from(v) / (1.0 + (-f64::from(v)).exp());
        let ulp = f64::from(f32::EPSILON) * want.abs().max(f64::from(f32::MIN_POSITIVE));
        assert!(
            (f64::from(got) - want).abs() <= 4.0 * ulp,
            "silu({v}): {got}, want {want}"
        );
    }
}

#[test]
fn silu_written_out_is_one_op() {
    for operands in [["x", "s"], ["s", "x"]] {
        let nodes = vec![
            node1("Sigmoid", "gate", &["x"], "s"),
            node1("Mul", "silu", &operands, "y"),
        ];
        let onnx = common::model(
            13,
            nodes,
            vec![fixed("x", &[4, 10])],
            vec![unshaped("y")],
            vec![],
        );
        let (ops, kind, x, y) = run(&onnx);
        assert_eq!(ops, 1, "{operands:?}");
        assert!(
            matches!(kind, Some(OpKind::Unary(p)) if p.op == UnaryOp::Swish { alpha: 1.0 }),
            "{kind:?}"
        );
        assert_silu(&x, &y);
    }
}

#[test]
fn a_sigmoid_read_elsewhere_stays() {
    // The gate is also a graph output: the Mul cannot take it over.
    let nodes = vec![
        node1("Sigmoid", "gate", &["x"], "s"),
        node1("Mul", "silu", &["x", "s"], "y"),
    ];
    let onnx = common::model(
        13,
        nodes,
        vec![fixed("x", &[4, 10])],
        vec![unshaped("y"), unshaped("s")],
        vec![],
    );
    let (ops, _, x, y) = run(&onnx);
    assert_eq!(ops, 2);
    assert_silu(&x, &y);
}
