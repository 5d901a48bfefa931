//! The ops imported as decompositions into existing kinds: Einsum, OneHot, LpNormalization, IsNaN
//! and IsInf. Each lowering runs on small inputs whose outputs are worked out by hand here; the
//! `attention_einsum` model of `tests/models/ops/` (made by `make.py` there) checks an attention block
//! written with Einsum and LpNormalization against onnxruntime.

use crate::common;

use common::golden::*;
use common::{
    assert_close, assert_contains, attr_i, attr_s, convert_err, fixed, floats, ints, model, node,
    typed, unshaped,
};
use ember_convert::onnx::proto::{data_type, AttributeProto};
use ember_convert::{convert, ConvertOptions};
use ember_core::{AlignedBuf, Model, Session};

/// Converts `onnx`, runs it with each input's little-endian bytes, and returns output 0's dims and
/// bytes.
fn run_bytes(onnx: &[u8], inputs: &[Vec<u8>]) -> (Vec<usize>, Vec<u8>) {
    let converted = convert(onnx, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let blob = AlignedBuf::from_bytes(&converted.blob);
    let model = Model::parse(blob.as_bytes()).expect("the blob parses");
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).expect("the session opens");
    for (i, bytes) in inputs.iter().enumerate() {
        s.input(i).unwrap().bytes_mut().copy_from_slice(bytes);
    }
    s.run().expect("the model runs");
    let out = s.output(0).unwrap();
    let dims = out.dims().iter().map(|&d| d as usize).collect();
    (dims, out.bytes().to_vec())
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// An Einsum of FLOAT inputs of dims `dims`, run on `xs`: the output's dims and values.
fn einsum(equation: &str, dims: &[&[i64]], xs: &[&[f32]]) -> (Vec<usize>, Vec<f32>) {
    let names = ["a", "b", "c"];
    let inputs = dims.iter().zip(names).map(|(d, n)| fixed(n, d)).collect();
    let n = node(
        "Einsum",
        "einsum",
        &names[..dims.len()],
        &["y"],
        vec![attr_s("equation", equation)],
    );
    let onnx = model(12, vec![n], inputs, vec![unshaped("y")], vec![]);
    let bytes: Vec<Vec<u8>> = xs.iter().map(|x| f32_bytes(x)).collect();
    let (d, y) = run_bytes(&onnx, &bytes);
    (d, f32s(&y))
}

#[test]
fn einsum_transposes_sums_and_takes_diagonals() {
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // [[1, 2, 3], [4, 5, 6]]
    assert_eq!(
        einsum("ij->ji", &[&[2, 3]], &[&x]),
        (vec![3, 2], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
    );
    assert_eq!(
        einsum("ij->i", &[&[2, 3]], &[&x]),
        (vec![2], vec![6.0, 15.0])
    );
    assert_eq!(einsum("ij->", &[&[2, 3]], &[&x]), (vec![], vec![21.0]));
    // Implicit "ij" is "ij->ij", a copy.
    assert_eq!(einsum("ij", &[&[2, 3]], &[&x]), (vec![2, 3], x.to_vec()));
    // [[1, 2, 3], [4, 5, 6], [7, 8, 9]]: diagonal 1, 5, 9; trace 15.
    let m: Vec<f32> = (1..=9).map(|v| v as f32).collect();
    assert_eq!(
        einsum("ii->i", &[&[3, 3]], &[&m]),
        (vec![3], vec![1.0, 5.0, 9.0])
    );
    assert_eq!(einsum("ii", &[&[3, 3]], &[&m]), (vec![], vec![15.0]));
    // Two batches of [[1, 2], [3, 4]] and [[5, 6], [7, 8]]: diagonals [1, 4] and [5, 8].
    let b: Vec<f32> = (1..=8).map(|v| v as f32).collect();
    assert_eq!(
        einsum("...ii->...i", &[&[2, 2, 2]], &[&b]),
        (vec![2, 2], vec![1.0, 4.0, 5.0, 8.0])
    );
}

#[test]
fn einsum_contracts_two_operands() {
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // [[1, 2, 3], [4, 5, 6]]
    let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]; // [[1, 0], [0, 1], [1, 1]]
                                            // a @ b = [[4, 5], [10, 11]]
    assert_eq!(
        einsum("ij,jk->ik", &[&[2, 3], &[3, 2]], &[&a, &b]),
        (vec![2, 2], vec![4.0, 5.0, 10.0, 11.0])
    );
    // Transposed output: (a @ b)^T.
    assert_eq!(
        einsum("ij,jk->ki", &[&[2, 3], &[3, 2]], &[&a, &b]),
        (vec![2, 2], vec![4.0, 10.0, 5.0, 11.0])
    );
    // a @ a^T = [[14, 32], [32, 77]], with the second operand's axes named the other way round.
    assert_eq!(
        einsum("ik,jk", &[&[2, 3], &[2, 3]], &[&a, &a]),
        (vec![2, 2], vec![14.0, 32.0, 32.0, 77.0])
    );
    assert_eq!(
        einsum("i,i", &[&[3], &[3]], &[&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]]),
        (vec![], vec![32.0])
    );
    // Nothing contracted: outer and element-wise products.
    assert_eq!(
        einsum(
            "i,j->ij",
            &[&[2], &[3]],
            &[&[1.0, 2.0], &[1.0, 10.0, 100.0]]
        ),
        (vec![2, 3], vec![1.0, 10.0, 100.0, 2.0, 20.0, 200.0])
    );
    assert_eq!(
        einsum("ij,ij->ji", &[&[2, 3], &[2, 3]], &[&a, &a]),
        (vec![3, 2], vec![1.0, 16.0, 4.0, 25.0, 9.0, 36.0])
    );
}

#[test]
fn einsum_batched_attention_forms() {
    // q [1, 2, 2, 2]: head 0 [[1, 0], [0, 1]], head 1 [[1, 1], [2, 0]]; k = q.
    let q = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0];
    // q k^T per head: head 0 the identity, head 1 [[2, 2], [2, 4]].
    let s = einsum(
        "bhqd,bhkd->bhqk",
        &[&[1, 2, 2, 2], &[1, 2, 2, 2]],
        &[&q, &q],
    );
    assert_eq!(
        s,
        (
            vec![1, 2, 2, 2],
            vec![1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 4.0]
        )
    );
    // p v with p = the scores above and v = q: head 0 q itself, head 1 [[6, 2], [10, 2]].
    let c = einsum(
        "bhqk,bhkd->bhqd",
        &[&[1, 2, 2, 2], &[1, 2, 2, 2]],
        &[&s.1, &q],
    );
    assert_eq!(
        c,
        (
            vec![1, 2, 2, 2],
            vec![1.0, 0.0, 0.0, 1.0, 6.0, 2.0, 10.0, 2.0]
        )
    );
    // The same product as a plain batched matmul.
    let c2 = einsum("bij,bjk->bik", &[&[2, 2, 2], &[2, 2, 2]], &[&s.1, &q]);
    assert_eq!(c2.1, c.1);
    // Three operands, contracted left to right: (a b) c with a = b = c = [[1, 1], [0, 1]]: [[1, 3], [0, 1]].
    let u = [1.0, 1.0, 0.0, 1.0];
    let three = einsum("ij,jk,kl->il", &[&[2, 2], &[2, 2], &[2, 2]], &[&u, &u, &u]);
    assert_eq!(three, (vec![2, 2], vec![1.0, 3.0, 0.0, 1.0]));
}

#[test]
fn einsum_errors_name_the_equation() {
    let one = |eq: &str, elem: i32| {
        let n = node("Einsum", "e", &["a"], &["y"], vec![attr_s("equation", eq)]);
        convert_err(&model(
            12,
            vec![n],
            vec![typed("a", elem, &[2, 3])],
            vec![unshaped("y")],
            vec![],
        ))
    };
    let err = one("ij->i", data_type::DOUBLE);
    assert_contains(&err, "equation \"ij->i\" sums over axes");
    assert_contains(&err, "FLOAT only");
    assert_contains(
        &one("ij->k", data_type::FLOAT),
        "equation \"ij->k\": the output's 'k' is in no input",
    );
    assert_contains(&one("i$->i", data_type::FLOAT), "'$'");
}

/// A OneHot of INT64 `indices` (run time) with constant `depth` and `values`, at `opset`.
fn one_hot(
    opset: i64,
    indices: &[i64],
    dims: &[i64],
    depth: f32,
    axis: Option<i64>,
) -> (Vec<usize>, Vec<f32>) {
    let attrs = axis.map(|a| vec![attr_i("axis", a)]).unwrap_or_default();
    let n = node(
        "OneHot",
        "onehot",
        &["indices", "depth", "values"],
        &["y"],
        attrs,
    );
    let inits = vec![
        floats("depth", &[], &[depth]),
        floats("values", &[2], &[-1.0, 5.0]),
    ];
    let onnx = model(
        opset,
        vec![n],
        vec![typed("indices", data_type::INT64, dims)],
        vec![unshaped("y")],
        inits,
    );
    let bytes = indices.iter().flat_map(|i| i.to_le_bytes()).collect();
    let (d, y) = run_bytes(&onnx, &[bytes]);
    (d, f32s(&y))
}

#[test]
fn one_hot_rows_and_negative_indices() {
    // depth 3: 0 -> [5, -1, -1]; 2 -> [-1, -1, 5]; -1 -> class 2; 3 and -4 are outside: all off.
    let (d, y) = one_hot(11, &[0, 2, -1, 3, -4], &[5], 3.0, None);
    assert_eq!(d, [5, 3]);
    #[rustfmt::skip]
    assert_eq!(y, [
        5.0, -1.0, -1.0,
        -1.0, -1.0, 5.0,
        -1.0, -1.0, 5.0,
        -1.0, -1.0, -1.0,
        -1.0, -1.0, -1.0,
    ]);
    // Before opset 11 a negative index is outside too.
    let (_, y) = one_hot(9, &[-1], &[1], 3.0, None);
    assert_eq!(y, [-1.0, -1.0, -1.0]);
    // axis 0 on [2] indices: [depth, 2], one column per index; depth 2.9 truncates to 2.
    let (d, y) = one_hot(11, &[1, 0], &[2], 2.9, Some(0));
    assert_eq!((d, y), (vec![2, 2], vec![-1.0, 5.0, 5.0, -1.0]));
}

#[test]
fn one_hot_needs_a_constant_depth() {
    let n = node(
        "OneHot",
        "onehot",
        &["indices", "depth", "values"],
        &["y"],
        vec![],
    );
    let inputs = vec![
        typed("indices", data_type::INT64, &[2]),
        fixed("depth", &[]),
    ];
    let onnx = model(
        11,
        vec![n],
        inputs,
        vec![unshaped("y")],
        vec![floats("values", &[2], &[0.0, 1.0])],
    );
    assert_contains(&convert_err(&onnx), "depth (\"depth\") must be a constant");
    let n = node(
        "OneHot",
        "onehot",
        &["indices", "depth", "values"],
        &["y"],
        vec![],
    );
    let inits = vec![ints("depth", &[0]), floats("values", &[2], &[0.0, 1.0])];
    let onnx = model(
        11,
        vec![n],
        vec![typed("indices", data_type::INT64, &[2])],
        vec![unshaped("y")],
        inits,
    );
    assert_contains(&convert_err(&onnx), "it must be at least 1");
}

/// LpNormalization of a FLOAT `[2, 3]` input.
fn lp_norm(x: &[f32], p: i64, axis: i64) -> Vec<f32> {
    let n = node(
        "LpNormalization",
        "lp",
        &["x"],
        &["y"],
        vec![attr_i("p", p), attr_i("axis", axis)],
    );
    let onnx = model(
        7,
        vec![n],
        vec![fixed("x", &[2, 3])],
        vec![unshaped("y")],
        vec![],
    );
    f32s(&run_bytes(&onnx, &[f32_bytes(x)]).1)
}

#[test]
fn lp_normalization_by_hand() {
    // Rows [3, 0, 4] (L2 5, L1 7) and zeros, which stay zeros as in onnxruntime.
    let x = [3.0, 0.0, 4.0, 0.0, 0.0, 0.0];
    assert_close(&lp_norm(&x, 2, 1), &[0.6, 0.0, 0.8, 0.0, 0.0, 0.0]);
    assert_close(
        &lp_norm(&x, 1, -1),
        &[3.0 / 7.0, 0.0, 4.0 / 7.0, 0.0, 0.0, 0.0],
    );
    // Over axis 0 the columns are [3, 0], [0, 0], [4, 0].
    assert_close(&lp_norm(&x, 2, 0), &[1.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
    let n = node(
        "LpNormalization",
        "lp",
        &["x"],
        &["y"],
        vec![attr_i("p", 3)],
    );
    let onnx = model(
        7,
        vec![n],
        vec![fixed("x", &[2, 3])],
        vec![unshaped("y")],
        vec![],
    );
    assert_contains(&convert_err(&onnx), "attribute p=3 is not supported");
}

/// IsNaN or IsInf on `x`, the output as bools.
fn classify(op: &str, attrs: Vec<AttributeProto>, x: &[f32]) -> Vec<bool> {
    let n = node(op, "c", &["x"], &["y"], attrs);
    let len = [x.len() as i64];
    let y = typed("y", data_type::BOOL, &len);
    let onnx = model(20, vec![n], vec![fixed("x", &len)], vec![y], vec![]);
    run_bytes(&onnx, &[f32_bytes(x)])
        .1
        .iter()
        .map(|&b| b != 0)
        .collect()
}

#[test]
fn is_nan_and_is_inf_by_hand() {
    let x = [
        1.0,
        f32::NAN,
        f32::INFINITY,
        -0.0,
        f32::NEG_INFINITY,
        f32::MAX,
    ];
    assert_eq!(
        classify("IsNaN", vec![], &x),
        [false, true, false, false, false, false]
    );
    assert_eq!(
        classify("IsInf", vec![], &x),
        [false, false, true, false, true, false]
    );
    let pos = classify("IsInf", vec![attr_i("detect_negative", 0)], &x);
    assert_eq!(pos, [false, false, true, false, false, false]);
    let neg = classify("IsInf", vec![attr_i("detect_positive", 0)], &x);
    assert_eq!(neg, [false, false, false, false, true, false]);
    let none = vec![attr_i("detect_positive", 0), attr_i("detect_negative", 0)];
    assert_eq!(classify("IsInf", none, &x), [false; 6]);
}

#[test]
fn attention_einsum_matches_onnxruntime() {
    let c = check_case("attention_einsum");
    let names = op_names(&c);
    // The projections with constant weights are FullyConnected layers, the two products of
    // activations batched MatMuls; the norms are Reduce L2 and L1.
    assert_op_count(&c, "MatMul", 2);
    assert!(names.contains(&"FullyConnected"), "{names:?}");
    assert!(
        names.contains(&"ReduceL2") && names.contains(&"ReduceL1"),
        "{names:?}"
    );
}
