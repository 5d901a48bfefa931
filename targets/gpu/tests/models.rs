//! Every model under `tests/models/` (digits, dscnn, kws) on Vulkan gives the same top-1 as on the CPU
//! for every golden sample, and scores within 1e-4 of the CPU's. Skips (printing why) without a Vulkan
//! device unless `EMBER_REQUIRE_GPU=1`.

mod common;

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
