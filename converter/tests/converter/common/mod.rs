//! Small ONNX models built in Rust with the converter's own prost messages, for tests.
#![allow(dead_code)]

pub mod golden;

use ember_convert::onnx::proto::{
    attribute_type, data_type, AttributeProto, Dimension, DimensionValue, GraphProto, ModelProto,
    NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, TypeProtoTensor,
    TypeValue, ValueInfoProto,
};
use ember_convert::{convert, ConvertOptions};
use prost::Message;

/// A dim of a value-info shape: a number or a symbolic name.
pub enum D {
    /// Fixed.
    N(i64),
    /// Symbolic.
    P(&'static str),
}

/// A FLOAT value-info with the given dims.
pub fn value(name: &str, dims: &[D]) -> ValueInfoProto {
    value_of(name, data_type::FLOAT, dims)
}

/// A value-info of ONNX element type `elem` and fixed dims.
pub fn typed(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    let d: Vec<D> = dims.iter().map(|&n| D::N(n)).collect();
    value_of(name, elem, &d)
}

/// A value-info of ONNX element type `elem` with the given dims.
pub fn value_of(name: &str, elem: i32, dims: &[D]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                D::N(n) => DimensionValue::DimValue(*n),
                D::P(p) => DimensionValue::DimParam(p.to_string()),
            }),
            denotation: String::new(),
        })
        .collect();
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(TypeValue::TensorType(TypeProtoTensor {
                elem_type: elem,
                shape: Some(TensorShapeProto { dim }),
            })),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

/// A FLOAT value-info with fixed dims.
pub fn fixed(name: &str, dims: &[i64]) -> ValueInfoProto {
    let d: Vec<D> = dims.iter().map(|&n| D::N(n)).collect();
    value(name, &d)
}

/// A FLOAT value-info without a shape (for outputs).
pub fn unshaped(name: &str) -> ValueInfoProto {
    ValueInfoProto::float_unshaped(name)
}

/// A FLOAT initializer (raw little-endian data).
pub fn floats(name: &str, dims: &[i64], data: &[f32]) -> TensorProto {
    let raw = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    TensorProto::from_raw(name, dims, data_type::FLOAT, raw)
}

/// An INT64 initializer (typed field).
pub fn ints(name: &str, data: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: vec![data.len() as i64],
        data_type: data_type::INT64,
        int64_data: data.to_vec(),
        ..TensorProto::default()
    }
}

/// The message of the error that converting `onnx` with default options must give.
pub fn convert_err(onnx: &[u8]) -> String {
    convert(onnx, &ConvertOptions::default())
        .expect_err("conversion must fail")
        .to_string()
}

/// Asserts that `msg` contains `part`, showing the whole message when it does not.
#[track_caller]
pub fn assert_contains(msg: &str, part: &str) {
    assert!(msg.contains(part), "{msg:?} does not contain {part:?}");
}

/// Asserts that one of `lines` contains `part`, showing them all when none does.
#[track_caller]
pub fn assert_any_contains(lines: &[String], part: &str) {
    assert!(
        lines.iter().any(|l| l.contains(part)),
        "{lines:?}: none contains {part:?}"
    );
}

/// Asserts that `got` is `want` element by element, within a relative 1e-4 (absolute below 1).
#[track_caller]
pub fn assert_close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= 1e-4 * w.abs().max(1.0),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// Deterministic pseudo-random values in [-1, 1).
pub fn pseudo_random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A node.
pub fn node(
    op: &str,
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: name.into(),
        op_type: op.into(),
        attribute: attrs,
        ..NodeProto::default()
    }
}

/// A node without attributes and with the one output `output`.
pub fn node1(op: &str, name: &str, inputs: &[&str], output: &str) -> NodeProto {
    node(op, name, inputs, &[output], vec![])
}

/// An INT attribute.
pub fn attr_i(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INT,
        i: Some(v),
        ..AttributeProto::default()
    }
}

/// An INTS attribute.
pub fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INTS,
        ints: v.to_vec(),
        ..AttributeProto::default()
    }
}

/// A FLOAT attribute.
pub fn attr_f(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::FLOAT,
        f: Some(v),
        ..AttributeProto::default()
    }
}

/// A STRING attribute.
pub fn attr_s(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::STRING,
        s: Some(v.as_bytes().to_vec()),
        ..AttributeProto::default()
    }
}

/// A [`model`] of one node, whose output `y` is the graph's (unshaped).
pub fn one_node_model(
    opset: i64,
    node: NodeProto,
    inputs: Vec<ValueInfoProto>,
    initializers: Vec<TensorProto>,
) -> Vec<u8> {
    model(opset, vec![node], inputs, vec![unshaped("y")], initializers)
}

/// A model of the default domain at `opset` around one graph.
pub fn model(
    opset: i64,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    initializers: Vec<TensorProto>,
) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        producer_name: "ember-convert tests".into(),
        graph: Some(GraphProto {
            node: nodes,
            name: "test".into(),
            initializer: initializers,
            input: inputs,
            output: outputs,
            ..GraphProto::default()
        }),
        ..ModelProto::default()
    }
    .encode_to_vec()
}
