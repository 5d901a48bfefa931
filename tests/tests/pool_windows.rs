//! MaxPool and AveragePool with `ceil_mode=1` and with `dilations`
//! (`converter/tests/models/ops/pool_{ceil,dilations}`, made by `make.py` there with onnxruntime's
//! outputs) through ember-cpu at every instruction-set level this CPU runs, on one thread and on
//! three: its own pooling kernels see the extra end padding of `ceil_mode`, and the dilated windows
//! run as strided slices and binary ops.

use std::path::PathBuf;

use ember_core::{AlignedBuf, Model};
use ember_cpu::{Cpu, Isa};
use ember_tests::read_npy_f32;

fn ops_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../converter/tests/models/ops")
}

#[test]
fn pools_with_ceil_mode_and_dilations_match_onnxruntime_on_ember_cpu() {
    for case in ["pool_ceil", "pool_dilations"] {
        let onnx = std::fs::read(ops_dir().join(format!("{case}.onnx"))).expect("the model reads");
        let blob = ember_convert::convert(&onnx, &Default::default())
            .unwrap_or_else(|e| panic!("{case}: {e}"))
            .blob;
        let blob = AlignedBuf::from_bytes(&blob);
        let model = Model::parse(blob.as_bytes()).expect("the blob parses");
        let (_, x) = read_npy_f32(&ops_dir().join(format!("{case}.x.npy")));
        let (_, want) = read_npy_f32(&ops_dir().join(format!("{case}.y.npy")));
        let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        for isa in Isa::supported() {
            for threads in [1, 3] {
                let cpu = Cpu::with_isa(isa, threads).expect("the level runs here");
                let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(&model).unwrap());
                let mut s = cpu.session(&model, arena.as_mut_bytes()).unwrap();
                s.input(0).unwrap().write_f32(&x).unwrap();
                s.run().unwrap();
                let mut got = vec![0.0f32; want.len()];
                s.output(0).unwrap().read_f32(&mut got).unwrap();
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-5 * scale,
                        "{case} on {isa:?}, {threads} threads: element {i}: {g} vs {w}"
                    );
                }
            }
        }
    }
}
