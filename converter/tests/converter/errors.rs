//! Bad input gives a `ConvertError` whose message names what is wrong, never a panic.

use crate::common;

use common::*;
use ember_convert::{convert, ConvertError, ConvertOptions};
use proptest::prelude::*;

fn opts() -> ConvertOptions {
    ConvertOptions::default()
}

/// `x [1, 2, 5, 5]` through a 3x3 Conv with `attrs`, weights named `w`.
fn conv_model(
    attrs: Vec<ember_convert::onnx::proto::AttributeProto>,
    with_weights: bool,
) -> Vec<u8> {
    let inits = if with_weights {
        vec![floats("w", &[4, 2, 3, 3], &pseudo_random(72, 1))]
    } else {
        vec![]
    };
    one_node_model(
        13,
        node("Conv", "conv7", &["x", "w"], &["y"], attrs),
        vec![fixed("x", &[1, 2, 5, 5])],
        inits,
    )
}

fn err_of(bytes: &[u8], o: &ConvertOptions) -> (ConvertError, String) {
    let e = convert(bytes, o).expect_err("conversion must fail");
    let msg = e.to_string();
    (e, msg)
}

#[test]
fn unsupported_op_names_node_op_and_opset() {
    let m = one_node_model(
        13,
        node1("StringNormalizer", "mystery", &["x"], "y"),
        vec![fixed("x", &[1, 4])],
        vec![],
    );
    let (e, msg) = err_of(&m, &opts());
    assert!(
        matches!(&e, ConvertError::UnsupportedOp { node, op, opset: 13, .. } if node == "mystery" && op == "StringNormalizer"),
        "{e:?}"
    );
    assert_contains(&msg, "node \"mystery\" (op StringNormalizer, opset 13)");
    assert!(
        msg.contains("Conv") && msg.contains("Softmax"),
        "lists the supported ops: {msg}"
    );
}

#[test]
fn op_of_another_domain_is_unsupported() {
    let mut n = node1("FusedConv", "fc", &["x"], "y");
    n.domain = "com.microsoft".into();
    let m = one_node_model(13, n, vec![fixed("x", &[1, 4])], vec![]);
    let (e, msg) = err_of(&m, &opts());
    assert!(matches!(&e, ConvertError::UnsupportedOp { domain, .. } if domain == "com.microsoft"));
    assert_contains(&msg, "com.microsoft");
}

#[test]
fn bad_attribute_value_names_the_attribute() {
    let (e, msg) = err_of(
        &conv_model(vec![attr_s("auto_pad", "SAME_MIDDLE")], true),
        &opts(),
    );
    assert!(matches!(e, ConvertError::Node { .. }), "{e:?}");
    assert!(
        msg.starts_with("node \"conv7\" (op Conv, opset 13): attribute auto_pad=SAME_MIDDLE"),
        "{msg}"
    );
}

#[test]
fn attribute_of_the_wrong_type_is_an_error() {
    let (_, msg) = err_of(&conv_model(vec![attr_f("group", 1.0)], true), &opts());
    assert_contains(&msg, "attribute group must be of type INT");
}

#[test]
fn inconsistent_attributes_are_errors() {
    let (_, msg) = err_of(
        &conv_model(vec![attr_ints("kernel_shape", &[5, 5])], true),
        &opts(),
    );
    assert_contains(&msg, "kernel_shape=[5, 5]");
    let (_, msg) = err_of(&conv_model(vec![attr_ints("pads", &[1, 1])], true), &opts());
    assert_contains(&msg, "pads=[1, 1] must have 4 values");
    let (_, msg) = err_of(&conv_model(vec![attr_i("group", 3)], true), &opts());
    assert_contains(&msg, "group 3");
    let (_, msg) = err_of(
        &conv_model(
            vec![
                attr_s("auto_pad", "VALID"),
                attr_ints("pads", &[1, 1, 1, 1]),
            ],
            true,
        ),
        &opts(),
    );
    assert_contains(&msg, "cannot be combined");
}

#[test]
fn missing_initializer_names_the_input() {
    let (e, msg) = err_of(&conv_model(vec![], false), &opts());
    assert!(matches!(e, ConvertError::Node { .. }), "{e:?}");
    assert_contains(&msg, "node \"conv7\" (op Conv, opset 13): input 1 (\"w\")");
    assert_contains(&msg, "missing initializer");
}

#[test]
fn garbage_bytes_are_an_error() {
    for bytes in [
        &b""[..],
        b"\xff\xff\xff\xff",
        b"not an onnx model at all",
        &[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f],
    ] {
        assert!(convert(bytes, &opts()).is_err());
    }
    let (e, _) = err_of(b"\x3a\x05\x0a\x03abc", &opts());
    assert!(
        matches!(e, ConvertError::Decode { .. } | ConvertError::Model { .. }),
        "{e:?}"
    );
}

#[test]
fn truncated_model_is_an_error() {
    let m = conv_model(vec![], true);
    for len in (0..m.len()).step_by(7) {
        let _ = convert(&m[..len], &opts());
    }
    assert!(convert(&m[..m.len() / 2], &opts()).is_err());
}

#[test]
fn dynamic_non_batch_dim_names_the_input_and_dim() {
    let m = one_node_model(
        13,
        node1("Relu", "r", &["image"], "y"),
        vec![value(
            "image",
            &[D::P("batch"), D::N(3), D::P("height"), D::N(8)],
        )],
        vec![],
    );
    let (e, msg) = err_of(&m, &opts());
    assert!(
        matches!(&e, ConvertError::Input { name, .. } if name == "image"),
        "{e:?}"
    );
    assert_contains(&msg, "input \"image\": dimension 2 (height) is dynamic");
    assert_contains(&msg, "--shape image=?,3,?,8");
    // With the override it converts.
    let o = ConvertOptions {
        shapes: vec![("image".into(), vec![2, 3, 4, 8])],
        ..opts()
    };
    let c = convert(&m, &o).unwrap();
    assert_eq!(c.report.inputs[0].1, vec![2, 3, 4, 8]);
}

/// A Relu of `input [N, 4]`, its batch `N` symbolic.
fn relu_of_dynamic_batch() -> Vec<u8> {
    one_node_model(
        13,
        node1("Relu", "r", &["input"], "y"),
        vec![value("input", &[D::P("N"), D::N(4)])],
        vec![],
    )
}

#[test]
fn dynamic_batch_defaults_to_one_with_a_notice() {
    let m = relu_of_dynamic_batch();
    let c = convert(&m, &opts()).unwrap();
    assert_eq!(c.report.inputs[0].1, vec![1, 4]);
    assert_eq!(
        c.report.notices,
        vec![
            "input \"input\": dynamic batch dimension N set to 1 (use --shape input=...)"
                .to_string()
        ]
    );
}

#[test]
fn shape_override_with_wrong_rank_is_an_error() {
    let m = relu_of_dynamic_batch();
    let o = ConvertOptions {
        shapes: vec![("input".into(), vec![1, 2, 4])],
        ..opts()
    };
    let (e, msg) = err_of(&m, &o);
    assert!(
        matches!(&e, ConvertError::Input { name, .. } if name == "input"),
        "{e:?}"
    );
    assert_contains(&msg, "has rank 3, but the input has rank 2");

    let o = ConvertOptions {
        shapes: vec![("input".into(), vec![1, 5])],
        ..opts()
    };
    assert!(err_of(&m, &o).1.contains("fixes it to 4"));
    let o = ConvertOptions {
        shapes: vec![("inptu".into(), vec![1, 4])],
        ..opts()
    };
    let (_, msg) = err_of(&m, &o);
    assert!(
        msg.contains("inptu") && msg.contains("its inputs are: input"),
        "{msg}"
    );
}

#[test]
fn external_data_is_rejected_with_advice() {
    let mut w = floats("w", &[4, 2, 3, 3], &[]);
    w.raw_data.clear();
    w.data_location = ember_convert::onnx::proto::DATA_LOCATION_EXTERNAL;
    w.external_data = vec![ember_convert::onnx::proto::StringStringEntryProto {
        key: "location".into(),
        value: "weights.bin".into(),
    }];
    let m = one_node_model(
        13,
        node1("Conv", "c", &["x", "w"], "y"),
        vec![fixed("x", &[1, 2, 5, 5])],
        vec![w],
    );
    let (e, msg) = err_of(&m, &opts());
    assert!(matches!(e, ConvertError::Tensor { .. }), "{e:?}");
    assert!(
        msg.contains("weights.bin") && msg.contains("save_as_external_data=False"),
        "{msg}"
    );
}

#[test]
fn initializer_with_wrong_element_count_is_an_error() {
    let m = one_node_model(
        13,
        node1("Conv", "c", &["x", "w"], "y"),
        vec![fixed("x", &[1, 2, 5, 5])],
        vec![floats("w", &[4, 2, 3, 3], &[1.0; 10])],
    );
    let (_, msg) = err_of(&m, &opts());
    assert_contains(
        &msg,
        "tensor \"w\": dims [4, 2, 3, 3] need 72 elements but the data holds 10",
    );
}

#[test]
fn old_opset_and_missing_graph_are_errors() {
    let m = model(6, vec![], vec![], vec![], vec![]);
    assert!(err_of(&m, &opts()).1.contains("opset 6"));
    let (e, _) = err_of(&[], &opts());
    assert!(matches!(e, ConvertError::Model { .. }), "{e:?}");
}

#[test]
fn unsupported_modes_are_errors() {
    let pad = |mode: &str| {
        one_node_model(
            13,
            node(
                "Pad",
                "pad3",
                &["x", "p"],
                &["y"],
                vec![attr_s("mode", mode)],
            ),
            vec![fixed("x", &[1, 4])],
            vec![ints("p", &[0, 1, 0, 1])],
        )
    };
    // `wrap` came in opset 19; this model is opset 13.
    assert!(err_of(&pad("wrap"), &opts())
        .1
        .contains("mode=wrap is not supported"));
    assert!(err_of(&pad("mirror"), &opts())
        .1
        .contains("mode=mirror is not supported"));
    for mode in ["constant", "reflect", "edge"] {
        assert!(convert(&pad(mode), &opts()).is_ok(), "{mode}");
    }

    let pool = |attrs| {
        one_node_model(
            13,
            node("MaxPool", "mp", &["x"], &["y"], attrs),
            vec![fixed("x", &[1, 2, 5, 5])],
            vec![],
        )
    };
    let k = || attr_ints("kernel_shape", &[2, 2]);
    assert!(
        err_of(&pool(vec![k(), attr_i("storage_order", 1)]), &opts())
            .1
            .contains("storage_order=1")
    );
    assert!(err_of(
        &pool(vec![
            k(),
            attr_ints("dilations", &[2, 2]),
            attr_ints("pads", &[2, 0, 0, 0])
        ]),
        &opts()
    )
    .1
    .contains("pads [2, 0, 0, 0] must be smaller than the window [2, 2]"));
    // 5x5 with 2x2 windows, stride 2: ceil gives 3 where floor gives 2, as extra end padding.
    let ceil = pool(vec![
        k(),
        attr_ints("strides", &[2, 2]),
        attr_i("ceil_mode", 1),
    ]);
    let c = convert(&ceil, &opts()).expect("ceil_mode converts");
    assert_eq!(c.report.outputs[0].1, [1, 2, 3, 3]);
    // 6x6 with 2x2 windows, stride 2: ceil and floor agree.
    let even = one_node_model(
        13,
        node(
            "MaxPool",
            "mp",
            &["x"],
            &["y"],
            vec![k(), attr_ints("strides", &[2, 2]), attr_i("ceil_mode", 1)],
        ),
        vec![fixed("x", &[1, 2, 6, 6])],
        vec![],
    );
    assert!(convert(&even, &opts()).is_ok());
    assert!(err_of(&pool(vec![]), &opts())
        .1
        .contains("kernel_shape is required"));
}

#[test]
fn non_constant_shape_input_is_an_error() {
    let m = one_node_model(
        13,
        node1("Reshape", "rs", &["x", "s"], "y"),
        vec![fixed("x", &[2, 6]), fixed("s", &[2])],
        vec![],
    );
    let (_, msg) = err_of(&m, &opts());
    assert_contains(
        &msg,
        "node \"rs\" (op Reshape, opset 13): input shape (\"s\") must be a constant",
    );
}

#[test]
fn undefined_output_is_an_error() {
    let m = model(
        13,
        vec![],
        vec![fixed("x", &[2])],
        vec![unshaped("nowhere")],
        vec![],
    );
    let (e, _) = err_of(&m, &opts());
    assert!(
        matches!(&e, ConvertError::Output { name, .. } if name == "nowhere"),
        "{e:?}"
    );
}

/// One node `op` over `x [2, 3]` (and `b`, when given), for the element-wise math importers.
fn math_model(
    op: &str,
    attrs: Vec<ember_convert::onnx::proto::AttributeProto>,
    b: Option<&[i64]>,
) -> Vec<u8> {
    let (inputs, inits) = match b {
        Some(dims) => {
            let n = dims.iter().product::<i64>() as usize;
            (
                vec!["x", "b"],
                vec![floats("b", dims, &pseudo_random(n, 3))],
            )
        }
        None => (vec!["x"], vec![]),
    };
    one_node_model(
        20,
        node(op, "m0", &inputs, &["y"], attrs),
        vec![fixed("x", &[2, 3])],
        inits,
    )
}

#[test]
fn unsupported_math_attributes_name_node_op_and_value() {
    let cases = [
        (
            math_model("Gelu", vec![attr_s("approximate", "erfc")], None),
            "approximate=\"erfc\"",
        ),
        (math_model("Mod", vec![], Some(&[3])), "fmod=0"),
        (
            math_model("Celu", vec![attr_f("alpha", 0.0)], None),
            "alpha must not be 0",
        ),
        (
            math_model("LeakyRelu", vec![attr_f("alpha", f32::NAN)], None),
            "alpha must not be NaN",
        ),
        // PRelu's slope may not grow X (unidirectional broadcasting).
        (
            math_model("PRelu", vec![], Some(&[2, 2, 3])),
            "does not broadcast",
        ),
    ];
    for (m, want) in cases {
        let (e, msg) = err_of(&m, &opts());
        assert!(
            matches!(&e, ConvertError::Node { node, .. } if node == "m0"),
            "{e:?}"
        );
        assert_contains(&msg, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = convert(&bytes, &opts());
    }

    #[test]
    fn corrupted_digits_model_never_panics(flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/models/digits/model.onnx");
        let mut bytes = std::fs::read(path).unwrap();
        for (at, v) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= v;
        }
        let _ = convert(&bytes, &opts());
    }
}

/// `x [1, 2, 9]` (1-D) through `op` with `attrs`; a Conv gets weights `w [4, 2, 3]`.
fn one_d_model(op: &str, attrs: Vec<ember_convert::onnx::proto::AttributeProto>) -> Vec<u8> {
    let (inputs, inits) = if op == "Conv" {
        (
            vec!["x", "w"],
            vec![floats("w", &[4, 2, 3], &pseudo_random(24, 2))],
        )
    } else {
        (vec!["x"], vec![])
    };
    one_node_model(
        13,
        node(op, "seq1", &inputs, &["y"], attrs),
        vec![fixed("x", &[1, 2, 9])],
        inits,
    )
}

#[test]
fn one_d_window_errors_name_node_op_and_opset() {
    let cases = [
        (
            "Conv",
            vec![attr_ints("pads", &[1, 1, 1, 1])],
            "pads=[1, 1, 1, 1] must have 2 values [begin, end]",
        ),
        (
            "Conv",
            vec![attr_ints("strides", &[1, 2])],
            "strides=[1, 2] must have 1 value",
        ),
        (
            "Conv",
            vec![attr_ints("kernel_shape", &[3, 3])],
            "kernel_shape=[3, 3] does not match the weights' kernel [3]",
        ),
        (
            "MaxPool",
            vec![attr_ints("kernel_shape", &[2, 2])],
            "kernel_shape=[2, 2] must have 1 value",
        ),
        (
            "MaxPool",
            vec![
                attr_ints("kernel_shape", &[2]),
                attr_ints("dilations", &[2, 2]),
            ],
            "dilations=[2, 2] must have 1 value",
        ),
    ];
    for (op, attrs, want) in cases {
        let (_, msg) = err_of(&one_d_model(op, attrs), &opts());
        assert!(
            msg.contains(&format!("node \"seq1\" (op {op}, opset 13)")) && msg.contains(want),
            "{want}: {msg}"
        );
    }
    // A 1-D Conv with weights of the 2-D rank says what it expects.
    let m = one_node_model(
        13,
        node1("Conv", "seq1", &["x", "w"], "y"),
        vec![fixed("x", &[1, 2, 9])],
        vec![floats("w", &[4, 2, 3, 3], &pseudo_random(72, 3))],
    );
    let (_, msg) = err_of(&m, &opts());
    assert_contains(&msg, "expected [M, C/group, K]");
}
