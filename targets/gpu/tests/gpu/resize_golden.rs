//! The filtered resizes of `converter/tests/models/ops/resize_filters.onnx` (cubic with both
//! coefficients and `exclude_outside`, antialiased linear and cubic up and down, `half_pixel_symmetric`;
//! made by `array_cases.py` there, golden output from onnxruntime) converted and run on ember-cpu's
//! kernels (`Device::Cpu`) and on Vulkan, each against the golden output. The Vulkan half skips
//! (printing why) without a Vulkan device unless `EMBER_REQUIRE_GPU=1`.

use crate::common;

use std::path::PathBuf;

use common::{run_on, vulkan};
use ember_convert::{convert, ConvertOptions};
use ember_core::AlignedBuf;
use ember_gpu::Device;
use ember_tests::read_npy_f32;

/// `converter/tests/models/ops/<file>`.
fn case(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../converter/tests/models/ops")
        .join(file)
}

/// `|got - golden| <= 1e-5 * max(1, max |golden|)`, the bound of `tests/models/check_goldens.py`.
fn assert_golden(device: Device, got: &[f32], golden: &[f32]) {
    assert_eq!(got.len(), golden.len(), "{device}: output length");
    let scale = golden.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (i, (&g, &w)) in got.iter().zip(golden).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * scale,
            "{device}: element {i}: {g}, onnxruntime {w}"
        );
    }
}

#[test]
fn filtered_resizes_match_onnxruntime() {
    let onnx = std::fs::read(case("resize_filters.onnx")).expect("model is in the repository");
    let converted = convert(&onnx, &ConvertOptions::default()).expect("resize_filters converts");
    let blob = AlignedBuf::from_bytes(&converted.blob);
    let (_, x) = read_npy_f32(&case("resize_filters.x.npy"));
    let (_, golden) = read_npy_f32(&case("resize_filters.y.npy"));
    assert_golden(
        Device::Cpu,
        &run_on(blob.as_bytes(), Device::Cpu, &[&x]),
        &golden,
    );
    let Some(gpu) = vulkan() else { return };
    assert_golden(gpu, &run_on(blob.as_bytes(), gpu, &[&x]), &golden);
}
