//! Every model under `tests/models/` (digits, dscnn, kws) on Vulkan gives the same top-1 as on the CPU
//! for every golden sample, and scores within 1e-4 of the CPU's; the converter's pooling models with
//! `ceil_mode` and `dilations` match onnxruntime. Skips (printing why) without a Vulkan device unless
//! `EMBER_REQUIRE_GPU=1`.

use crate::common;

use common::{assert_close, run_on, vulkan};
use ember_core::format::DType;
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

/// `converter/tests/models/ops/<case>.onnx` converted, with its input and onnxruntime's output.
pub(crate) fn op_model(case: &str) -> (AlignedBuf, Vec<f32>, Vec<f32>) {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../converter/tests/models/ops");
    let onnx = std::fs::read(dir.join(format!("{case}.onnx"))).expect("the model reads");
    let blob = ember_convert::convert(&onnx, &Default::default())
        .unwrap_or_else(|e| panic!("{case}: {e}"))
        .blob;
    let (_, x) = read_npy_f32(&dir.join(format!("{case}.x.npy")));
    let (_, want) = read_npy_f32(&dir.join(format!("{case}.y.npy")));
    (AlignedBuf::from_bytes(&blob), x, want)
}

/// MaxPool and AveragePool with `ceil_mode=1` (extra end padding of the pool kernels, and a Pad for
/// `count_include_pad=1`) and with `dilations` (strided Slices, Binary Max/Add/Mul) give
/// onnxruntime's outputs on Vulkan: `converter/tests/models/ops/pool_{ceil,dilations}` (make.py).
#[test]
fn pools_with_ceil_mode_and_dilations_match_onnxruntime() {
    let Some(gpu) = vulkan() else { return };
    for case in ["pool_ceil", "pool_dilations"] {
        let (blob, x, want) = op_model(case);
        let got = run_on(blob.as_bytes(), gpu, &[&x]);
        assert_close(case, &got, &want);
        eprintln!("{case}: {} values on {gpu} match onnxruntime", got.len());
    }
}

/// Models whose integer and bool tensors (shape arithmetic, masks, indices, top-k) the device does not
/// hold: they open on Vulkan anyway, the ops that touch those tensors run on the host inside the same
/// session (and the session lists them, with why), and the outputs match onnxruntime's
/// (`converter/tests/models/ops`, made by its scripts). Before host ops, each was refused when the
/// session opened.
#[test]
fn models_with_integer_and_bool_tensors_open_and_match_onnxruntime() {
    let Some(gpu) = vulkan() else { return };
    for case in ["attention_einsum", "post_processing", "where"] {
        let (blob, x, want) = op_model(case);
        let session = ember_gpu::DeviceSession::new(blob.as_bytes(), gpu).unwrap();
        let host = session.host_ops();
        assert!(!host.is_empty(), "{case}: every op ran on the device");
        for (index, op, why) in &host {
            assert!(
                !why.is_empty(),
                "{case}: op {index} ({op}) runs on the host without a reason"
            );
        }
        let got = run_on(blob.as_bytes(), gpu, &[&x]);
        let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * scale.max(1.0),
                "{case}: element {i}: {gpu} gives {g}, onnxruntime {w}"
            );
        }
        assert_eq!(got.len(), want.len(), "{case}");
        eprintln!(
            "{case}: {} values on {gpu} match onnxruntime; on the host: {}",
            got.len(),
            host.iter()
                .map(|(i, op, _)| format!("#{i} {op}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// A graph input and a graph output of types the device does not hold: int64 ids cast to f32, and a
/// comparison's bool output, each a one-op model on Vulkan against the CPU reference (the same
/// values: the ops run on the host, their device inputs read back and device outputs written in
/// place).
#[test]
fn integer_inputs_and_bool_outputs_cross_between_host_and_device() {
    use ember_core::ops::math::cast::CastParams;
    use ember_core::ops::math::compare::{CompareOp, CompareParams};
    use ember_core::OpKind;
    use ember_testkit::model::{input, typed_input};
    let Some(gpu) = vulkan() else { return };
    let ids = vec![0.0, 5.0, -7.0, 1_000_000.0, 3.0, 2.0];
    let cast = OpKind::Cast(CastParams { to: DType::F32 });
    let x = typed_input(&[2, 3], ids.clone(), DType::I64);
    let (got, cpu) = common::run_both(gpu, cast, &[x], &[2, 3], DType::F32);
    assert_eq!(got, ids);
    assert_eq!(cpu, ids);
    let greater = OpKind::Compare(CompareParams {
        op: CompareOp::Greater,
    });
    let (a, b) = (
        input(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        input(&[2, 3], vec![6.0, 5.0, 4.0, 3.0, 2.0, 1.0]),
    );
    let (got, cpu) = common::run_both(gpu, greater, &[a, b], &[2, 3], DType::Bool);
    assert_eq!(got, [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    assert_eq!(got, cpu);
}
