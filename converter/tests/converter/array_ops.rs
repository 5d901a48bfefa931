//! Array and shape ops against onnxruntime: the models made by `tests/models/ops/array_cases.py` are
//! converted, run through an ember-core `Session`, and compared with the goldens within 1e-5 (data
//! movement is exact; Resize interpolates). Structural checks pin what is folded at conversion time.

use crate::common;

use common::golden::*;
use common::*;
use ember_convert::onnx::proto::NodeProto;

#[test]
fn shape_subgraph_is_folded() {
    let c = check_case("shape_subgraph");
    // Shape, Gather, Concat, Range, Cast, ConstantOfShape, Size and the shape Slice leave no op.
    let ops = op_names(&c);
    assert!(
        !ops.iter()
            .any(|o| ["Gather", "Slice", "Concat"].contains(o)),
        "{ops:?}"
    );
    assert_eq!(
        ops.iter().filter(|&&o| o == "Broadcast").count(),
        1,
        "{ops:?}"
    );
}

#[test]
fn slicing() {
    let c = check_case("slicing");
    let ops = op_names(&c);
    assert!(ops.contains(&"Slice") && ops.contains(&"Gather"), "{ops:?}");
}

#[test]
fn slicing_old_opset_attributes() {
    check_case("slicing_v9");
}

#[test]
fn depth_to_space_and_back() {
    let c = check_case("spatial");
    // No kernel of their own: reshapes and transposes.
    let ops = op_names(&c);
    assert!(
        ops.iter()
            .all(|o| ["Conv2d", "Transpose", "Reshape", "Add"].contains(o)),
        "{ops:?}"
    );
}

#[test]
fn resize_modes() {
    check_case("resize");
}

/// Cubic (both coefficients, with and without `exclude_outside`, every coordinate transformation),
/// antialiased linear and cubic up and down, and `half_pixel_symmetric`, on the reference kernels.
#[test]
fn resize_filters() {
    let c = check_case("resize_filters");
    assert_op_count(&c, "Resize", 17);
}

/// Converts `x [2, 3, 4]` through `nodes` (output `y`) and returns the error message.
fn error_of(
    opset: i64,
    nodes: Vec<NodeProto>,
    inits: Vec<ember_convert::onnx::proto::TensorProto>,
) -> String {
    let m = model(
        opset,
        nodes,
        vec![fixed("x", &[2, 3, 4]), fixed("x2", &[2])],
        vec![unshaped("y")],
        inits,
    );
    convert_err(&m)
}

#[test]
fn errors_name_the_node_and_the_reason() {
    let cases: Vec<(Vec<NodeProto>, Vec<_>, &[&str])> = vec![
        (
            vec![node1("Gather", "g", &["x", "x2"], "y")],
            vec![],
            &["\"g\"", "indices", "constant"],
        ),
        (
            vec![node(
                "Gather",
                "g",
                &["x", "i"],
                &["y"],
                vec![attr_i("axis", 1)],
            )],
            vec![ints("i", &[3])],
            &["\"g\"", "index 3"],
        ),
        (
            vec![node("Cast", "c", &["x"], &["y"], vec![attr_i("to", 8)])],
            vec![],
            &["\"c\"", "STRING", "not supported"],
        ),
        (
            vec![node1("Slice", "s", &["x", "x2", "e"], "y")],
            vec![ints("e", &[1])],
            &["\"s\"", "starts", "constant"],
        ),
        (
            vec![node(
                "Resize",
                "r",
                &["x", "", "sc"],
                &["y"],
                vec![attr_s(
                    "coordinate_transformation_mode",
                    "tf_crop_and_resize",
                )],
            )],
            vec![floats("sc", &[3], &[1.0, 2.0, 2.0])],
            &["\"r\"", "tf_crop_and_resize"],
        ),
        (
            vec![node1("Resize", "r", &["x", "", "sc"], "y")],
            vec![floats("sc", &[3], &[2.0, 1.0, 1.0])],
            &["\"r\"", "axis 0"],
        ),
        (
            vec![node(
                "Split",
                "sp",
                &["x", "parts"],
                &["y", "z"],
                vec![attr_i("axis", 2)],
            )],
            vec![ints("parts", &[1, 2])],
            &["\"sp\"", "add up to 4"],
        ),
        (
            vec![node1("Tile", "t", &["x", "reps"], "y")],
            vec![ints("reps", &[i64::MAX, 2, 2])],
            &["\"t\"", "too many elements"],
        ),
        (
            vec![node1("Squeeze", "sq", &["x", "ax"], "y")],
            vec![ints("ax", &[1])],
            &["\"sq\"", "not 1"],
        ),
    ];
    for (nodes, inits, want) in cases {
        let msg = error_of(13, nodes, inits);
        for w in want {
            assert!(msg.contains(w), "{msg:?} should mention {w}");
        }
    }
}

#[test]
fn where_with_constant_conditions() {
    let c = check_case("where");
    // The all-constant Where is folded, the all-true one is free, and the mixed ones select at run
    // time with a bool condition (no arithmetic masks).
    let ops = op_names(&c);
    assert_eq!(ops.iter().filter(|&&o| o == "Where").count(), 3, "{ops:?}");
    assert!(!ops.contains(&"Mul"), "{ops:?}");
}

#[test]
fn resize_between_convolutions_runs_channels_last() {
    let c = check_case("upsample");
    assert_eq!(
        op_names(&c),
        [
            "Transpose",
            "Conv2d",
            "Resize",
            "Relu",
            "Resize",
            "Conv2d",
            "Transpose"
        ]
    );
}

#[test]
fn deprecated_upsample() {
    check_case("upsample_v9");
}

/// A blob whose Gather indices were changed after conversion (CRC recomputed) is rejected by
/// `Model::parse`: the kernel never sees an index outside the axis.
#[test]
fn parse_rejects_gather_indices_outside_the_axis() {
    use ember_core::format::{SectionKind, Storage, CRC32, HEADER_LEN, SECTION_ENTRY_LEN};

    let converted = check_case("slicing");
    let mut blob = converted.blob.clone();
    let (op, indices) = {
        let aligned = ember_core::AlignedBuf::from_bytes(&blob);
        let model = ember_core::Model::parse(aligned.as_bytes()).unwrap();
        let op = (0..model.op_count())
            .find(|&i| matches!(model.op(i).unwrap().kind, ember_core::OpKind::Gather(_)))
            .expect("the slicing case has a runtime Gather");
        let id = model.op(op).unwrap().inputs[1];
        let Storage::Weights { offset } = model.tensor(id as usize).unwrap().storage else {
            panic!("gather indices must be weights");
        };
        (op, offset as usize)
    };
    let read_u32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let sections = u16::from_le_bytes([blob[20], blob[21]]) as usize;
    let weights = (0..sections)
        .map(|i| HEADER_LEN + i * SECTION_ENTRY_LEN)
        .find(|&at| read_u32(&blob, at) == SectionKind::Weights as u32)
        .map(|at| read_u32(&blob, at + 4) as usize)
        .expect("the blob has a weights section");
    let at = weights + indices;
    blob[at..at + 4].copy_from_slice(&99.0f32.to_le_bytes());
    let crc = CRC32.checksum(&blob[HEADER_LEN..]);
    blob[16..20].copy_from_slice(&crc.to_le_bytes());
    let aligned = ember_core::AlignedBuf::from_bytes(&blob);
    match ember_core::Model::parse(aligned.as_bytes()) {
        Err(ember_core::Error::BadOp { op: o, reason }) => {
            assert_eq!(o as usize, op);
            assert!(reason.contains("gather index"), "{reason}");
        }
        other => panic!("expected BadOp, got {other:?}"),
    }
}

#[test]
fn slices_of_nhwc_activations_stay_nhwc() {
    let c = check_case("channel_split");
    assert_eq!(
        op_names(&c),
        [
            "Transpose",
            "Conv2d",
            "Slice",
            "Slice",
            "Add",
            "Slice",
            "Conv2d",
            "Transpose"
        ]
    );
}

#[test]
fn concat_of_nhwc_activations_stays_nhwc() {
    let c = check_case("fpn_concat");
    assert_eq!(
        op_names(&c),
        [
            "Transpose",
            "Conv2d",
            "Conv2d",
            "Resize",
            "Concat",
            "Conv2d",
            "Transpose"
        ]
    );
}
