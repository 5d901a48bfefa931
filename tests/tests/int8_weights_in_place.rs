//! int8 kernels read their weights where they lie in the blob: the arena a session needs is exactly the
//! planned activations plus the reported persistent and scratch bytes (and alignment padding), and it is
//! smaller than the weights, which therefore cannot be in it. Checked on the digits CNN quantized by
//! Ember (`--quantize int8`).

use ember_convert::quantize::{self, Calibration};
use ember_convert::ConvertOptions;
use ember_core::format::Storage;
use ember_core::{AlignedBuf, DType, Model, Session};
use ember_tests::{model_dir, read_npy_f32};

#[test]
fn int8_weights_are_read_from_the_blob_not_copied() {
    let onnx = std::fs::read(model_dir("digits").join("model.onnx")).unwrap();
    let (_, calib) = read_npy_f32(&model_dir("digits").join("calib.npy"));
    let samples: Vec<Vec<Vec<f32>>> = calib.chunks(64).map(|c| vec![c.to_vec()]).collect();
    let opts = ConvertOptions::default();
    let ranges =
        quantize::calibrate(&onnx, &opts, &samples, Calibration::MinMax, &mut |_, _| {}).unwrap();
    let (qdq, _) = quantize::quantize_qdq(&onnx, &ranges).unwrap();
    let int8 = ember_convert::convert(&qdq, &opts).unwrap();

    let blob = AlignedBuf::from_bytes(&int8.blob);
    let model = Model::parse(blob.as_bytes()).unwrap();
    // Every int8 weight tensor (the conv and fully connected kernels) lives in the weights section.
    let mut int8_weight_bytes = 0usize;
    let mut weight_tensors = 0;
    for i in 0..model.tensor_count() {
        let t = model.tensor(i).unwrap();
        let bytes = t.dims.iter().map(|&d| d as usize).product::<usize>() * t.dtype.size();
        if let Storage::Weights { .. } = t.storage {
            weight_tensors += 1;
            if t.dtype == DType::I8 {
                int8_weight_bytes += bytes;
            }
        }
    }
    assert!(weight_tensors >= 4 && int8_weight_bytes > 0);

    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut session = Session::new(&model, arena.as_mut_bytes()).unwrap();
    let (_, x) = read_npy_f32(&model_dir("digits").join("x1.npy"));
    session.input(0).unwrap().write_f32(&x).unwrap();
    session.run().unwrap();
    let r = session.memory_report();
    assert_eq!(
        r.used_bytes,
        r.alignment_padding + r.persistent_bytes + r.planned_bytes + r.scratch_bytes,
        "{r:?}"
    );
    assert!(r.peak_bytes <= r.planned_bytes, "{r:?}");
    // The whole arena is smaller than the int8 weights alone: they cannot have been copied into it.
    assert!(
        r.used_bytes < int8_weight_bytes,
        "arena {} bytes, int8 weights {int8_weight_bytes} bytes",
        r.used_bytes
    );
    println!(
        "int8 digits: arena {} bytes (planned {}, persistent {}, scratch {}), int8 weights {} bytes in the blob",
        r.used_bytes, r.planned_bytes, r.persistent_bytes, r.scratch_bytes, int8_weight_bytes
    );
}
