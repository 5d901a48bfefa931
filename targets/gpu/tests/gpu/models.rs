//! Every model under `tests/models/` (digits, dscnn, kws) on Vulkan gives the same top-1 as on the CPU
//! for every golden sample, and scores within 1e-4 of the CPU's; the converter's pooling models with
//! `ceil_mode` and `dilations` match onnxruntime. Skips (printing why) without a Vulkan device unless
//! `EMBER_REQUIRE_GPU=1`.

use crate::common;

use common::{assert_close, run_on, vulkan};
use ember_core::AlignedBuf;
use ember_gpu::Device;
use ember_tests::{convert_model, model_dir, read_npy_f32};

fn top1(scores: &[f32], classes: usize) -> Vec<usize> {
    scores
        .chunks_exact(classes)
        .map(|row| {
            (0..classes)
                .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                .unwrap_or(0)
        })
        .collect()
}

#[test]
fn bundled_models_agree_on_top1() {
    let Some(gpu) = vulkan() else { return };
    for name in ["digits", "dscnn", "kws"] {
        let (shape, x) = read_npy_f32(&model_dir(name).join("x.npy"));
        let (y_shape, _) = read_npy_f32(&model_dir(name).join("y.npy"));
        let classes = *y_shape.last().expect("y.npy has a class axis");
        let blob = AlignedBuf::from_bytes(&convert_model(name, &[("input", &shape)]));
        let cpu = run_on(blob.as_bytes(), Device::Cpu, &[&x]);
        let got = run_on(blob.as_bytes(), gpu, &[&x]);
        assert_close(name, &got, &cpu);
        let (cpu_top, gpu_top) = (top1(&cpu, classes), top1(&got, classes));
        assert_eq!(
            gpu_top, cpu_top,
            "{name}: top-1 differs between {gpu} and the CPU"
        );
        eprintln!(
            "{name}: {} samples, same top-1 on {gpu} and cpu",
            cpu_top.len()
        );
    }
}

/// MaxPool and AveragePool with `ceil_mode=1` (extra end padding of the pool kernels, and a Pad for
/// `count_include_pad=1`) and with `dilations` (strided Slices, Binary Max/Add/Mul) give
/// onnxruntime's outputs on Vulkan: `converter/tests/models/ops/pool_{ceil,dilations}` (make.py).
#[test]
fn pools_with_ceil_mode_and_dilations_match_onnxruntime() {
    let Some(gpu) = vulkan() else { return };
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../converter/tests/models/ops");
    for case in ["pool_ceil", "pool_dilations"] {
        let onnx = std::fs::read(dir.join(format!("{case}.onnx"))).expect("the model reads");
        let blob = ember_convert::convert(&onnx, &Default::default())
            .unwrap_or_else(|e| panic!("{case}: {e}"))
            .blob;
        let blob = AlignedBuf::from_bytes(&blob);
        let (_, x) = read_npy_f32(&dir.join(format!("{case}.x.npy")));
        let (_, want) = read_npy_f32(&dir.join(format!("{case}.y.npy")));
        let got = run_on(blob.as_bytes(), gpu, &[&x]);
        assert_close(case, &got, &want);
        eprintln!("{case}: {} values on {gpu} match onnxruntime", got.len());
    }
}
