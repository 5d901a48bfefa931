//! End to end on `tests/models/digits`: convert the ONNX model, run the blob through an ember-core
//! `Session`, and compare with the onnxruntime goldens (batch 1, and all 360 images at once with
//! `--shape input=360,1,8,8`).

use crate::common;

use std::path::PathBuf;

use common::assert_any_contains;
use ember_convert::{convert, ConvertOptions};
use ember_testkit::model::{self, max_abs_diff, models_dir, run};

/// Largest difference from onnxruntime's probabilities: their scale is 1, so this is the relative
/// rule of `tests/models/check_goldens.py` (`rtol * max(1, max |golden|)`) with rtol 1e-4.
const TOLERANCE: f32 = 1e-4;

fn model_dir() -> PathBuf {
    models_dir().join("digits")
}

/// A float32 `.npy` of the digits model's folder, as `(shape, data)`.
fn read_npy(name: &str) -> (Vec<usize>, Vec<f32>) {
    model::read_npy(&model_dir().join(name))
}

fn onnx_bytes() -> Vec<u8> {
    std::fs::read(model_dir().join("model.onnx")).expect("model.onnx is in the repository")
}

#[test]
fn batch_one_matches_onnxruntime() {
    let converted = convert(&onnx_bytes(), &ConvertOptions::default()).unwrap();
    let r = &converted.report;
    assert_eq!(r.inputs, vec![("input".to_string(), vec![1, 1, 8, 8])]);
    assert_eq!(r.outputs, vec![("probs".to_string(), vec![1, 10])]);
    assert_any_contains(&r.notices, "dynamic batch dimension N set to 1");
    assert!(r.arena.activation_bytes >= r.arena.lower_bound_bytes);
    assert_eq!(r.blob_bytes, converted.blob.len());

    let (xs, x) = read_npy("x1.npy");
    let (ys, y) = read_npy("y1.npy");
    assert_eq!((xs, ys), (vec![1, 1, 8, 8], vec![1, 10]));
    let got = run(&converted.blob, &x);
    let diff = max_abs_diff(&got, &y);
    println!(
        "digits batch 1: max |ember - onnxruntime| = {diff:.3e}, arena {} bytes (lower bound {}), \
         blob {} bytes, weights {} bytes, {} ops",
        r.arena.activation_bytes,
        r.arena.lower_bound_bytes,
        r.blob_bytes,
        r.weights_bytes,
        r.ops.len()
    );
    assert!(diff <= TOLERANCE, "max abs diff {diff}");
}

#[test]
fn full_test_set_with_shape_override_matches_onnxruntime() {
    let opts = ConvertOptions {
        shapes: vec![("input".into(), vec![360, 1, 8, 8])],
        ..ConvertOptions::default()
    };
    let converted = convert(&onnx_bytes(), &opts).unwrap();
    let r = &converted.report;
    assert!(r.notices.is_empty(), "{:?}", r.notices);
    assert_eq!(r.outputs, vec![("probs".to_string(), vec![360, 10])]);

    let (_, x) = read_npy("x.npy");
    let (ys, y) = read_npy("y.npy");
    assert_eq!(ys, vec![360, 10]);
    let got = run(&converted.blob, &x);
    let diff = max_abs_diff(&got, &y);
    println!(
        "digits batch 360: max |ember - onnxruntime| = {diff:.3e}, arena {} bytes (lower bound {}), \
         blob {} bytes",
        r.arena.activation_bytes, r.arena.lower_bound_bytes, r.blob_bytes
    );
    assert!(diff <= TOLERANCE, "max abs diff {diff}");
}

#[test]
fn names_table_is_optional() {
    let with = convert(&onnx_bytes(), &ConvertOptions::default()).unwrap();
    let without = convert(
        &onnx_bytes(),
        &ConvertOptions {
            keep_names: false,
            ..ConvertOptions::default()
        },
    )
    .unwrap();
    assert!(without.blob.len() < with.blob.len());
    let blob = ember_core::AlignedBuf::from_bytes(&with.blob);
    let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.tensor_name(0), Some("input"));
    let names: Vec<&str> = (0..model.op_count())
        .filter_map(|i| model.op_name(i))
        .collect();
    assert!(names.contains(&"conv1+relu1"), "{names:?}");
    let blob = ember_core::AlignedBuf::from_bytes(&without.blob);
    let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.tensor_name(0), None);
}

#[test]
fn conversion_is_deterministic() {
    let a = convert(&onnx_bytes(), &ConvertOptions::default()).unwrap();
    let b = convert(&onnx_bytes(), &ConvertOptions::default()).unwrap();
    assert_eq!(a.blob, b.blob);
}
