//! Post-training quantization of the digits CNN by Ember (`ember convert --quantize int8`): calibrated on
//! 256 *training* images (`tests/models/digits/calib.npy`), evaluated on the 360 held-out test images
//! against their labels. The bar: int8 accuracy within 1 point of float.

use ember_convert::quantize::{self, Calibration};
use ember_core::{AlignedBuf, Model, Session};
use ember_tests::{model_dir, read_npy_f32};

fn samples(path: &str) -> Vec<Vec<Vec<f32>>> {
    let (_, data) = read_npy_f32(&model_dir("digits").join(path));
    data.chunks(64).map(|c| vec![c.to_vec()]).collect()
}

fn labels() -> Vec<i64> {
    let bytes = std::fs::read(model_dir("digits").join("labels.npy")).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

/// Top-1 accuracy of `blob` on the test images.
fn accuracy(blob: &[u8], images: &[Vec<Vec<f32>>], labels: &[i64]) -> f64 {
    let aligned = AlignedBuf::from_bytes(blob);
    let m = Model::parse(aligned.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(m.arena_bytes());
    let mut s = Session::new(&m, arena.as_mut_bytes()).unwrap();
    let mut right = 0;
    for (img, &label) in images.iter().zip(labels) {
        s.input(0).unwrap().write_f32(&img[0]).unwrap();
        s.run().unwrap();
        let y = s.output(0).unwrap().as_f32().unwrap().to_vec();
        let top = (0..y.len()).fold(0, |b, i| if y[i] > y[b] { i } else { b });
        right += usize::from(top as i64 == label);
    }
    right as f64 / images.len() as f64
}

fn onnx() -> Vec<u8> {
    std::fs::read(model_dir("digits").join("model.onnx")).unwrap()
}

#[test]
fn qdq_rewrite_quantizes_every_layer() {
    let opts = ember_convert::ConvertOptions::default();
    let ranges = quantize::calibrate(
        &onnx(),
        &opts,
        &samples("calib.npy"),
        Calibration::MinMax,
        &mut |_, _| {},
    )
    .unwrap();
    let (qdq, summary) = quantize::quantize_qdq(&onnx(), &ranges).unwrap();
    // The same calibration gives the same QDQ model, byte for byte (and so the same blob and source
    // hash): each call builds its maps with a new random hasher, so an order taken from one would show.
    for _ in 0..4 {
        assert!(quantize::quantize_qdq(&onnx(), &ranges).unwrap().0 == qdq);
    }
    // The input, the three Relu outputs (Conv and Gemm outputs are fused with them), both pools,
    // the flatten, the logits and the probabilities; two convs and two Gemms with their biases.
    assert_eq!(summary.activations, 9, "{summary:?}");
    assert_eq!((summary.weights, summary.biases), (4, 4), "{summary:?}");
    assert!(summary.skipped.is_empty(), "{summary:?}");
    // Relu outputs are non-negative: their calibrated range starts at 0.
    assert_eq!(ranges["relu1"].0, 0.0);
    assert!(ranges["input"].1 <= 1.0 && ranges["input"].0 >= 0.0);
}

#[test]
fn int8_digits_keep_accuracy_within_one_point() {
    let opts = ember_convert::ConvertOptions::default();
    let onnx = onnx();
    let calib = samples("calib.npy");
    for method in [Calibration::MinMax, Calibration::Percentile(99.99)] {
        let ranges = quantize::calibrate(&onnx, &opts, &calib, method, &mut |_, _| {}).unwrap();
        let (qdq, _) = quantize::quantize_qdq(&onnx, &ranges).unwrap();
        let float = ember_convert::convert(&onnx, &opts).unwrap();
        let int8 = ember_convert::convert(&qdq, &opts).unwrap();
        let ops: Vec<&str> = int8.report.ops.iter().map(|(_, op)| *op).collect();
        assert!(
            ops.iter().any(|op| op.starts_with("QuantConv2d")),
            "the convolutions run in int8: {ops:?}"
        );
        let test = samples("x.npy");
        let labels = labels();
        let (acc_f, acc_q) = (
            accuracy(&float.blob, &test, &labels),
            accuracy(&int8.blob, &test, &labels),
        );
        println!(
            "{method:?}: float {:.2}%, int8 {:.2}% (blob {} -> {} bytes, arena {} -> {} bytes)",
            100.0 * acc_f,
            100.0 * acc_q,
            float.blob.len(),
            int8.blob.len(),
            float.report.arena.activation_bytes,
            int8.report.arena.activation_bytes
        );
        assert!(acc_q >= acc_f - 0.01, "int8 {acc_q} vs float {acc_f}");
    }
}
