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

/// The outputs of `blob` on the first 40 test images, end to end.
fn outputs(blob: &[u8]) -> Vec<f32> {
    let aligned = AlignedBuf::from_bytes(blob);
    let m = Model::parse(aligned.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(m.arena_bytes());
    let mut s = Session::new(&m, arena.as_mut_bytes()).unwrap();
    let mut out = Vec::new();
    for img in samples("x.npy").iter().take(40) {
        s.input(0).unwrap().write_f32(&img[0]).unwrap();
        s.run().unwrap();
        out.extend_from_slice(s.output(0).unwrap().as_f32().unwrap());
    }
    out
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

/// A model below opset 13 quantizes as it is (its other nodes keep their opset's meaning): the int8
/// model of the digits CNN declared at opset 11 computes exactly what the opset-13 one does.
#[test]
fn a_model_below_opset_13_quantizes_to_the_same_int8_model() {
    use prost::Message;
    let opts = ember_convert::ConvertOptions::default();
    let onnx13 = onnx();
    let mut m = ember_convert::onnx::proto::ModelProto::decode(&onnx13[..]).unwrap();
    for o in m.opset_import.iter_mut().filter(|o| o.domain.is_empty()) {
        assert_eq!(o.version, 13, "the bundled digits model is opset 13");
        o.version = 11;
    }
    let onnx11 = m.encode_to_vec();
    let calib = samples("calib.npy");
    let int8 = |onnx: &[u8]| {
        let ranges =
            quantize::calibrate(onnx, &opts, &calib, Calibration::MinMax, &mut |_, _| {}).unwrap();
        let (qdq, summary) = quantize::quantize_qdq(onnx, &ranges).unwrap();
        (ember_convert::convert(&qdq, &opts).unwrap(), summary)
    };
    let ((q13, s13), (q11, s11)) = (int8(&onnx13), int8(&onnx11));
    assert_eq!((s13.opset, s11.opset), (13, 11));
    assert_eq!(
        (s11.activations, s11.weights, s11.biases),
        (9, 4, 4),
        "{s11:?}"
    );
    assert_eq!(q11.report.ops, q13.report.ops);
    assert_eq!(outputs(&q11.blob), outputs(&q13.blob));
}

/// Weights held by Constant nodes (as paddle2onnx writes every weight) quantize like initializers: the
/// digits CNN with its initializers moved into Constant nodes gives the same int8 model.
#[test]
fn weights_in_constant_nodes_quantize_like_initializers() {
    use ember_convert::onnx::proto::{attribute_type, AttributeProto, ModelProto, NodeProto};
    use prost::Message;
    let opts = ember_convert::ConvertOptions::default();
    let plain = onnx();
    let mut m = ModelProto::decode(&plain[..]).unwrap();
    let g = m.graph.as_mut().unwrap();
    let inits = std::mem::take(&mut g.initializer);
    assert!(inits.len() >= 8, "two convs and two Gemms with biases");
    g.input.retain(|v| inits.iter().all(|t| t.name != v.name));
    let constants = inits.into_iter().map(|t| NodeProto {
        output: vec![t.name.clone()],
        name: format!("{}_const", t.name),
        op_type: "Constant".into(),
        attribute: vec![AttributeProto {
            name: "value".into(),
            r#type: attribute_type::TENSOR,
            t: Some(t),
            ..AttributeProto::default()
        }],
        ..NodeProto::default()
    });
    g.node.splice(0..0, constants);
    let with_constants = m.encode_to_vec();
    let calib = samples("calib.npy");
    let int8 = |onnx: &[u8]| {
        let ranges =
            quantize::calibrate(onnx, &opts, &calib, Calibration::MinMax, &mut |_, _| {}).unwrap();
        let (qdq, summary) = quantize::quantize_qdq(onnx, &ranges).unwrap();
        (ember_convert::convert(&qdq, &opts).unwrap(), summary)
    };
    let ((a, sa), (b, sb)) = (int8(&plain), int8(&with_constants));
    assert_eq!((sb.activations, sb.weights, sb.biases), (9, 4, 4), "{sb:?}");
    assert_eq!((sa.activations, sa.weights, sa.biases), (9, 4, 4));
    assert_eq!(a.report.ops, b.report.ops);
    assert_eq!(a.report.weights_bytes, b.report.weights_bytes);
    assert_eq!(outputs(&a.blob), outputs(&b.blob));
}
