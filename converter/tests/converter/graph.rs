//! Graph plumbing on small hand-made models: identities, aliases and copies, constants, fusion,
//! and the errors of things the blob cannot express.

use crate::common;

use common::*;
use ember_convert::{convert, ConvertOptions, Converted};
use ember_core::format::Storage;
use ember_testkit::model;

fn conv(bytes: &[u8]) -> Converted {
    convert(bytes, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a converted model with one input and one output.
fn run(c: &Converted, x: &[f32]) -> Vec<f32> {
    model::run(&c.blob, x)
}

/// Storage of the input and output of op `i`.
fn op_storage(c: &Converted, i: usize) -> (Storage, Storage) {
    let blob = ember_core::AlignedBuf::from_bytes(&c.blob);
    let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
    let op = model.op(i).unwrap();
    let x = model.tensor(op.inputs[0] as usize).unwrap().storage;
    let y = model.tensor(op.output as usize).unwrap().storage;
    (x, y)
}

fn ops_of(c: &Converted) -> Vec<&'static str> {
    c.report.ops.iter().map(|(_, o)| *o).collect()
}

#[test]
fn graph_output_never_aliases_a_graph_input() {
    for op in ["Identity", "Flatten"] {
        let m = one_node_model(
            13,
            node1(op, "n", &["x"], "y"),
            vec![fixed("x", &[2, 3])],
            vec![],
        );
        let c = conv(&m);
        assert_eq!(ops_of(&c), ["Reshape"], "{op}");
        let (x, y) = op_storage(&c, 0);
        assert_ne!(x, y, "{op}: the output must be a copy");
        let input = pseudo_random(6, 3);
        assert_eq!(run(&c, &input), input);
    }
}

#[test]
fn reshape_chains_collapse_into_one_alias() {
    let m = model(
        13,
        vec![
            node1("Relu", "r1", &["x"], "r"),
            node1("Reshape", "rs1", &["r", "s1"], "a"),
            node("Flatten", "fl", &["a"], &["b"], vec![attr_i("axis", 2)]),
            node1("Identity", "id", &["b"], "c"),
            node1("Sigmoid", "sg", &["c"], "y"),
        ],
        vec![fixed("x", &[2, 3, 4])],
        vec![unshaped("y")],
        vec![ints("s1", &[4, 3, 2])],
    );
    let c = conv(&m);
    assert_eq!(ops_of(&c), ["Relu", "Reshape", "Sigmoid"]);
    assert_eq!(c.report.outputs[0].1, vec![12, 2]);
    let (x, y) = op_storage(&c, 1);
    assert_eq!(x, y, "the reshape is an alias");
    let input = pseudo_random(24, 5);
    let want: Vec<f32> = input
        .iter()
        .map(|&v| 1.0 / (1.0 + (-v.max(0.0)).exp()))
        .collect();
    let got = run(&c, &input);
    assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6));
}

#[test]
fn constant_nodes_feed_shapes_and_operands() {
    let tensor = ember_convert::onnx::proto::AttributeProto {
        name: "value".into(),
        r#type: ember_convert::onnx::proto::attribute_type::TENSOR,
        t: Some(floats("", &[], &[2.0])),
        ..Default::default()
    };
    let m = model(
        13,
        vec![
            node(
                "Constant",
                "shape",
                &[],
                &["s"],
                vec![attr_ints("value_ints", &[3, -1])],
            ),
            node("Constant", "k", &[], &["k"], vec![tensor]),
            node1("Reshape", "rs", &["x", "s"], "r"),
            node1("Mul", "mul", &["r", "k"], "y"),
        ],
        vec![fixed("x", &[6])],
        vec![unshaped("y")],
        vec![],
    );
    let c = conv(&m);
    assert_eq!(c.report.outputs[0].1, vec![3, 2]);
    let input = pseudo_random(6, 9);
    let got = run(&c, &input);
    assert_eq!(got, input.iter().map(|v| v * 2.0).collect::<Vec<_>>());
}

#[test]
fn activation_is_not_fused_into_a_shared_producer() {
    let m = model(
        13,
        vec![
            node1("Add", "add", &["x", "x"], "a"),
            node1("Relu", "relu", &["a"], "r"),
            node1("Mul", "mul", &["a", "r"], "y"),
        ],
        vec![fixed("x", &[4])],
        vec![unshaped("y")],
        vec![],
    );
    let c = conv(&m);
    assert_eq!(ops_of(&c), ["Add", "Relu", "Mul"]);
    let single = model(
        13,
        vec![
            node1("Add", "add", &["x", "x"], "a"),
            node1("Relu", "relu", &["a"], "y"),
        ],
        vec![fixed("x", &[4])],
        vec![unshaped("y")],
        vec![],
    );
    let c = conv(&single);
    assert_eq!(c.report.ops, vec![("add+relu".to_string(), "Add")]);
    assert_eq!(run(&c, &[-1.0, 0.5, 2.0, -0.25]), [0.0, 1.0, 4.0, 0.0]);
}

#[test]
fn mixed_float_and_integer_operands_are_an_error() {
    let m = one_node_model(
        13,
        node1("Add", "add_int", &["x", "k"], "y"),
        vec![fixed("x", &[2])],
        vec![ints("k", &[1, 2])],
    );
    let msg = convert_err(&m);
    assert_contains(
        &msg,
        "node \"add_int\" (op Add, opset 13): inputs are float32 and int64",
    );
}

/// An output that is a constant (here an initializer behind an Identity) is copied into the arena by an
/// op, under the output's name, so a caller reads it like any other output.
#[test]
fn constant_graph_output_is_copied_by_an_op() {
    let m = one_node_model(
        13,
        node1("Identity", "id", &["k"], "y"),
        vec![fixed("x", &[2])],
        vec![floats("k", &[2], &[1.0, 2.0])],
    );
    let c = conv(&m);
    assert_eq!(c.report.outputs.len(), 1);
    assert_eq!(c.report.ops.len(), 1, "{:?}", c.report.ops);
    assert_eq!(run(&c, &[9.0, 9.0]), [1.0, 2.0]);
}

#[test]
fn secondary_outputs_cannot_be_used() {
    let m = model(
        13,
        vec![
            node("Dropout", "drop", &["x"], &["d", "mask"], vec![]),
            node1("Add", "add", &["d", "mask"], "y"),
        ],
        vec![fixed("x", &[2])],
        vec![unshaped("y")],
        vec![],
    );
    let msg = convert_err(&m);
    assert_contains(
        &msg,
        "input 1 (\"mask\") is output of node \"drop\", the Dropout mask",
    );
    // Unused, it is fine.
    let m = one_node_model(
        13,
        node("Dropout", "drop", &["x"], &["y", "mask"], vec![]),
        vec![fixed("x", &[2])],
        vec![],
    );
    assert!(convert(&m, &ConvertOptions::default()).is_ok());
}

#[test]
fn shape_errors_name_the_node() {
    let m = one_node_model(
        13,
        node1("Conv", "conv3d", &["x", "w"], "y"),
        vec![fixed("x", &[1, 2, 4, 4, 4])],
        vec![floats("w", &[3, 2, 3, 3, 3], &[0.5; 162])],
    );
    let msg = convert_err(&m);
    assert!(
        msg.contains("node \"conv3d\" (op Conv, opset 13)")
            && msg.contains("only 1-D and 2-D convolution"),
        "{msg}"
    );
    let m = one_node_model(
        13,
        node1("Gemm", "g", &["x", "w"], "y"),
        vec![fixed("x", &[1, 2, 3])],
        vec![floats("w", &[3, 2], &[0.5; 6])],
    );
    let msg = convert_err(&m);
    assert_contains(
        &msg,
        "node \"g\" (op Gemm, opset 13): A [1, 2, 3] and B [3, 2] must both be 2-D",
    );
    let m = one_node_model(
        13,
        node1("Add", "add", &["x", "k"], "y"),
        vec![fixed("x", &[2, 3])],
        vec![floats("k", &[2], &[1.0, 2.0])],
    );
    let msg = convert_err(&m);
    assert_contains(&msg, "do not broadcast");
}

#[test]
fn unused_input_still_gets_a_buffer() {
    let m = one_node_model(
        13,
        node1("Relu", "r", &["x"], "y"),
        vec![fixed("x", &[2]), fixed("unused", &[3])],
        vec![],
    );
    let c = conv(&m);
    assert_eq!(c.report.inputs.len(), 2);
    assert_eq!(run(&c, &[-1.0, 1.0]), [0.0, 1.0]);
}

#[test]
fn parse_shape_argument() {
    assert_eq!(
        ConvertOptions::parse_shape("input=360,1,8,8"),
        Ok(("input".into(), vec![360, 1, 8, 8]))
    );
    // A name may hold `=`: the dims follow the last one.
    assert_eq!(
        ConvertOptions::parse_shape("a=b=1,2"),
        Ok(("a=b".into(), vec![1, 2]))
    );
    let no_name = ConvertOptions::parse_shape("=1,2").unwrap_err();
    assert!(no_name.contains("expected NAME=DIMS"), "{no_name}");
    assert!(ConvertOptions::parse_shape("input").is_err());
    let bad = ConvertOptions::parse_shape("input=1,x").unwrap_err();
    assert!(bad.contains("whole numbers"), "{bad}");
}

#[test]
fn cnn_tail_after_global_pool_needs_no_transpose() {
    let m = model(
        13,
        vec![
            node(
                "Conv",
                "conv",
                &["x", "w"],
                &["c"],
                vec![attr_ints("pads", &[1, 1, 1, 1])],
            ),
            node1("Relu", "relu", &["c"], "r"),
            node1("GlobalAveragePool", "gap", &["r"], "g"),
            node1("Flatten", "flat", &["g"], "f"),
            node(
                "Gemm",
                "fc",
                &["f", "fw", "fb"],
                &["y"],
                vec![attr_i("transB", 1)],
            ),
        ],
        vec![fixed("x", &[1, 3, 6, 6])],
        vec![unshaped("y")],
        vec![
            floats("w", &[4, 3, 3, 3], &pseudo_random(108, 1)),
            floats("fw", &[2, 4], &pseudo_random(8, 2)),
            floats("fb", &[2], &[0.5, -0.5]),
        ],
    );
    let c = conv(&m);
    assert_eq!(
        c.report
            .ops
            .iter()
            .map(|(n, o)| (n.as_str(), *o))
            .collect::<Vec<_>>(),
        [
            ("x.to_nhwc", "Transpose"),
            ("conv+relu", "Conv2d"),
            ("gap", "GlobalAvgPool"),
            // The NHWC -> NCHW transpose of [1, 1, 1, 4] became a reshape, merged into Flatten's.
            ("flat", "Reshape"),
            ("fc", "FullyConnected"),
        ]
    );
    assert_eq!(c.report.outputs[0].1, vec![1, 2]);
}

/// `x [1, C, H, W] -> Conv 1x1 (C -> C) -> Flatten -> Gemm (transB) -> y [1, OUT]`, and, with
/// `second_reader`, the flattened values also as a second output (so the flatten transpose must stay).
fn conv_flatten_gemm(second_reader: bool) -> (Vec<u8>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let (c, h, w, out) = (3usize, 2usize, 2usize, 4usize);
    let k = c * h * w;
    // Small whole numbers: every product and sum is exact in f32, whatever the order.
    let x: Vec<f32> = (0..k).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let cw: Vec<f32> = (0..c * c).map(|i| ((i * 3) % 4) as f32 - 1.0).collect();
    let gw: Vec<f32> = (0..out * k).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
    let mut nodes = vec![
        node1("Conv", "conv", &["x", "cw"], "c"),
        node1("Flatten", "flatten", &["c"], "f"),
        node(
            "Gemm",
            "fc",
            &["f", "gw"],
            &["y"],
            vec![attr_i("transB", 1)],
        ),
    ];
    let mut outputs = vec![unshaped("y")];
    if second_reader {
        nodes.push(node1("Relu", "relu", &["f"], "r"));
        outputs.push(unshaped("r"));
    }
    let m = model(
        13,
        nodes,
        vec![fixed("x", &[1, c as i64, h as i64, w as i64])],
        outputs,
        vec![
            floats("cw", &[c as i64, c as i64, 1, 1], &cw),
            floats("gw", &[out as i64, k as i64], &gw),
        ],
    );
    // ONNX semantics, written out: NCHW conv, then the NCHW flatten, then y = f gw^T.
    let mut conv = vec![0f32; k];
    for o in 0..c {
        for p in 0..h * w {
            conv[o * h * w + p] = (0..c).map(|i| cw[o * c + i] * x[i * h * w + p]).sum();
        }
    }
    let y: Vec<f32> = (0..out)
        .map(|o| (0..k).map(|j| gw[o * k + j] * conv[j]).sum())
        .collect();
    (m, x, y, conv)
}

/// The Transpose back to NCHW before a flatten is folded into the fully connected weights (no
/// Transpose runs), with ONNX's result; with another reader of the flattened values it stays.
#[test]
fn flatten_transpose_folds_into_fully_connected_weights() {
    let (m, x, y, _) = conv_flatten_gemm(false);
    let c = conv(&m);
    // The input's transpose to NHWC stays; none runs between the conv and the fully connected layer.
    assert_eq!(
        ops_of(&c),
        ["Transpose", "Conv2d", "Reshape", "FullyConnected"]
    );
    assert_eq!(run(&c, &x), y);

    let (m, x, y, flat) = conv_flatten_gemm(true);
    let c = conv(&m);
    let transposes = ops_of(&c).iter().filter(|&&o| o == "Transpose").count();
    assert_eq!(transposes, 2, "{:?}", ops_of(&c));
    let outputs = model::run_outputs(&c.blob, &x);
    assert_eq!(outputs[0].0, y);
    let relu: Vec<f32> = flat.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(outputs[1].0, relu);
}
