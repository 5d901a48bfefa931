//! What the op table (`converter/src/onnx/ops/mod.rs`) checks for every node before and after its
//! importer runs: the model's opset against the importer's range, the number of inputs and outputs,
//! and that every attribute was read by the importer (or is one it may ignore).

use crate::common;

use common::*;
use ember_convert::onnx::proto::AttributeProto;
use ember_convert::{convert, ConvertOptions};

/// One node `op` named `n` from inputs `x` (`[1, 3, 4, 4]`) and the given extra initializers.
fn one_node(
    opset: i64,
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
    inits: Vec<ember_convert::onnx::proto::TensorProto>,
) -> Vec<u8> {
    model(
        opset,
        vec![node(op, "n", inputs, outputs, attrs)],
        vec![fixed("x", &[1, 3, 4, 4])],
        vec![unshaped(outputs[0])],
        inits,
    )
}

fn error_of(bytes: &[u8]) -> String {
    convert(bytes, &ConvertOptions::default())
        .expect_err("conversion must fail")
        .to_string()
}

fn converts(bytes: &[u8]) {
    if let Err(e) = convert(bytes, &ConvertOptions::default()) {
        panic!("conversion failed: {e}");
    }
}

#[test]
fn an_attribute_no_importer_reads_is_an_error_naming_it() {
    let m = one_node(13, "Relu", &["x"], &["y"], vec![attr_i("foo", 1)], vec![]);
    assert_eq!(
        error_of(&m),
        "node \"n\" (op Relu, opset 13): attribute(s) foo are not supported by Ember's importer \
         (the attributes it reads here: none)"
    );

    let w = floats("w", &[2, 3, 1, 1], &pseudo_random(6, 3));
    let attrs = vec![
        attr_ints("strides", &[1, 1]),
        attr_i("foo", 1),
        attr_f("bar", 0.5),
    ];
    let m = one_node(13, "Conv", &["x", "w"], &["y"], attrs, vec![w]);
    let msg = error_of(&m);
    assert!(
        msg.starts_with(
            "node \"n\" (op Conv, opset 13): attribute(s) foo, bar are not supported by Ember's \
             importer (the attributes it reads here: auto_pad, dilations, group, kernel_shape, \
             pads, strides)"
        ),
        "{msg}"
    );
}

#[test]
fn an_attribute_of_another_opset_is_rejected() {
    // ReduceMean takes its axes as an input from opset 18; the attribute form is gone.
    let m = one_node(
        18,
        "ReduceMean",
        &["x"],
        &["y"],
        vec![attr_ints("axes", &[1])],
        vec![],
    );
    let msg = error_of(&m);
    assert!(
        msg.starts_with(
            "node \"n\" (op ReduceMean, opset 18): attribute(s) axes are not supported by Ember's \
             importer (the attributes it reads here: keepdims, noop_with_empty_axes)"
        ),
        "{msg}"
    );
    // ... and noop_with_empty_axes came with the input.
    let m = one_node(
        13,
        "ReduceMean",
        &["x"],
        &["y"],
        vec![attr_i("noop_with_empty_axes", 1)],
        vec![],
    );
    assert!(
        error_of(&m).contains("attribute(s) noop_with_empty_axes are not supported"),
        "{}",
        error_of(&m)
    );
}

#[test]
fn attributes_that_change_nothing_are_ignored() {
    let m = one_node(
        7,
        "Dropout",
        &["x"],
        &["y"],
        vec![attr_f("ratio", 0.3)],
        vec![],
    );
    converts(&m);
    // What PyTorch writes for a bilinear upsampling: cubic_coeff_a and nearest_mode come along.
    let attrs = vec![
        attr_s("mode", "linear"),
        attr_s("coordinate_transformation_mode", "half_pixel"),
        attr_f("cubic_coeff_a", -0.75),
        attr_s("nearest_mode", "floor"),
    ];
    let scales = floats("s", &[4], &[1.0, 1.0, 2.0, 2.0]);
    let m = one_node(13, "Resize", &["x", "", "s"], &["y"], attrs, vec![scales]);
    converts(&m);
}

#[test]
fn an_op_outside_its_importers_opsets_is_an_error_naming_the_range() {
    // Gelu is an ONNX op from opset 20 on.
    let m = one_node(18, "Gelu", &["x"], &["y"], vec![], vec![]);
    assert_eq!(
        error_of(&m),
        "node \"n\" (op Gelu, opset 18): opset 18 is not supported by Ember's importer of Gelu, \
         which reads Gelu at opsets 20 and later; re-export the model at opset 20, or convert it \
         with onnx.version_converter.convert_version(model, 20)"
    );
    // Upsample was deprecated at opset 10 (Resize replaced it).
    let scales = floats("s", &[4], &[1.0, 1.0, 2.0, 2.0]);
    let m = one_node(10, "Upsample", &["x", "s"], &["y"], vec![], vec![scales]);
    assert_eq!(
        error_of(&m),
        "node \"n\" (op Upsample, opset 10): opset 10 is not supported by Ember's importer of \
         Upsample, which reads Upsample at opsets 7 to 9; re-export the model at opset 9, or \
         convert it with onnx.version_converter.convert_version(model, 9)"
    );
}

#[test]
fn a_node_with_too_many_or_too_few_inputs_or_outputs_is_an_error() {
    let m = one_node(13, "Relu", &["x", "x"], &["y"], vec![], vec![]);
    assert_eq!(
        error_of(&m),
        "node \"n\" (op Relu, opset 13): the node has 2 inputs, but Relu takes 1 input"
    );
    let m = one_node(13, "Reshape", &["x"], &["y"], vec![], vec![]);
    assert_eq!(
        error_of(&m),
        "node \"n\" (op Reshape, opset 13): the node has 1 input, but Reshape takes 2 inputs"
    );
    let m = one_node(13, "Clip", &["x", "", "", "x"], &["y"], vec![], vec![]);
    assert_eq!(
        error_of(&m),
        "node \"n\" (op Clip, opset 13): the node has 4 inputs, but Clip takes 1 to 3 inputs"
    );
    let m = one_node(13, "Relu", &["x"], &["y", "z"], vec![], vec![]);
    assert_eq!(
        error_of(&m),
        "node \"n\" (op Relu, opset 13): the node has 2 outputs, but Relu takes 1 output"
    );
}

#[test]
fn omitted_optional_inputs_at_the_end_do_not_count() {
    let m = one_node(13, "Clip", &["x", "", ""], &["y"], vec![], vec![]);
    converts(&m);
    let m = one_node(13, "Dropout", &["x", "", ""], &["y", ""], vec![], vec![]);
    converts(&m);
}
