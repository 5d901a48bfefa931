//! Zero-size dims: a declared `dim_value` of 0 (or a `--shape` override with a 0) is a real, empty
//! dim, not a dynamic one. Reductions over an empty axis give ONNX's identity values (sum 0, product 1,
//! max -inf, min +inf, log-sum -inf), and empty outputs run as empty tensors.

use crate::common;

use common::{attr_i, attr_ints, fixed, node, node1, one_node_model, value, D};
use ember_convert::onnx::proto::{AttributeProto, ValueInfoProto};
use ember_convert::{convert, ConvertOptions};
use ember_testkit::model::run_with_dims;

/// Converts `bytes` (with `opts`), runs it on `x`, and returns the first output and its dims.
fn run(bytes: &[u8], opts: &ConvertOptions, x: &[f32]) -> (Vec<f32>, Vec<usize>) {
    let c = convert(bytes, opts).unwrap_or_else(|e| panic!("{e}"));
    run_with_dims(&c.blob, x)
}

/// `op` over axis 1 of `x [2, 0, 3]`, dims kept (opset 11: axes as an attribute).
fn reduction(op: &str) -> Vec<u8> {
    let attrs = vec![attr_ints("axes", &[1]), attr_i("keepdims", 1)];
    reduce_model(op, attrs, fixed("x", &[2, 0, 3]))
}

/// `op` with attributes `attrs` over the input `x` (opset 11).
fn reduce_model(op: &str, attrs: Vec<AttributeProto>, x: ValueInfoProto) -> Vec<u8> {
    one_node_model(11, node(op, "r", &["x"], &["y"], attrs), vec![x], vec![])
}

#[test]
fn reductions_over_an_empty_axis_give_their_identity() {
    let cases = [
        ("ReduceSum", 0.0),
        ("ReduceSumSquare", 0.0),
        ("ReduceL1", 0.0),
        ("ReduceL2", 0.0),
        ("ReduceProd", 1.0),
        ("ReduceMax", f32::NEG_INFINITY),
        ("ReduceMin", f32::INFINITY),
        ("ReduceLogSum", f32::NEG_INFINITY),
        ("ReduceLogSumExp", f32::NEG_INFINITY),
    ];
    for (op, want) in cases {
        let (y, dims) = run(&reduction(op), &ConvertOptions::default(), &[]);
        assert_eq!(dims, [2, 1, 3], "{op}");
        assert_eq!(y, [want; 6], "{op}");
    }
}

#[test]
fn an_empty_output_runs() {
    // Reducing axis 2 of [2, 0, 3] keeps the empty axis: [2, 0, 1].
    let attrs = vec![attr_ints("axes", &[2])];
    let bytes = reduce_model("ReduceSum", attrs, fixed("x", &[2, 0, 3]));
    let (y, dims) = run(&bytes, &ConvertOptions::default(), &[]);
    assert_eq!(dims, [2, 0, 1]);
    assert!(y.is_empty());
}

#[test]
fn a_zero_override_is_a_real_dim() {
    // The second dim is symbolic; the override makes it 0.
    let attrs = vec![attr_ints("axes", &[1]), attr_i("keepdims", 0)];
    let bytes = reduce_model("ReduceSum", attrs, value("x", &[D::N(2), D::P("len")]));
    let opts = ConvertOptions {
        shapes: vec![("x".into(), vec![2, 0])],
        ..ConvertOptions::default()
    };
    let (y, dims) = run(&bytes, &opts, &[]);
    assert_eq!(dims, [2]);
    assert_eq!(y, [0.0, 0.0]);
}

#[test]
fn a_negative_dim_is_an_error() {
    let bytes = one_node_model(
        11,
        node1("Relu", "r", &["x"], "y"),
        vec![fixed("x", &[2, -3])],
        vec![],
    );
    let e = convert(&bytes, &ConvertOptions::default()).expect_err("conversion must fail");
    assert!(e.to_string().contains("negative size -3"), "{e}");
}

#[test]
fn a_minus_one_dim_is_dynamic() {
    // paddle2onnx writes dynamic dims as -1: a leading one defaults to 1, another needs --shape.
    let graph = |dims: &[i64]| {
        one_node_model(
            11,
            node1("Relu", "r", &["x"], "y"),
            vec![fixed("x", dims)],
            vec![],
        )
    };
    let (y, dims) = run(&graph(&[-1, 2]), &ConvertOptions::default(), &[-1.0, 3.0]);
    assert_eq!(dims, [1, 2]);
    assert_eq!(y, [0.0, 3.0]);
    let e = convert(&graph(&[1, -1]), &ConvertOptions::default()).expect_err("needs --shape");
    assert!(e.to_string().contains("dimension 1 (-1) is dynamic"), "{e}");
    let opts = ConvertOptions {
        shapes: vec![("x".into(), vec![1, 3])],
        ..ConvertOptions::default()
    };
    let (y, dims) = run(&graph(&[1, -1]), &opts, &[-1.0, 3.0, 0.5]);
    assert_eq!(dims, [1, 3]);
    assert_eq!(y, [0.0, 3.0, 0.5]);
}
