//! `ember` with int8 models: `--quantize int8` conversion with its agreement report, int8 expectations
//! compared in LSBs, int8 outputs written as int8 `.npy`, and `inspect` showing scales and zero points.
//! Goldens: onnxruntime's raw int8 logits of the `quantize_static` digits model (`tests/models/digits_qdq`).

mod common;

use common::{convert, ember, model, ok_text, scratch_dir, text};

#[test]
fn int8_outputs_compare_in_lsb_and_write_as_int8() {
    let dir = scratch_dir("int8_qdq");
    let blob = dir.join("q.ember");
    let b = blob.to_str().unwrap();
    let o = convert(
        &model("digits_qdq/model.onnx"),
        &blob,
        &["--shape", "input=360,1,8,8"],
    );
    ok_text(&o);
    let logits = "logits_QuantizeLinear_Output";
    let expect = format!("{logits}={}", model("digits_qdq/q.npy"));
    let out_npy = dir.join("logits.npy");
    let output = format!("{logits}={}", out_npy.display());
    let x = model("digits/x.npy");
    // The default (single) rounding gives onnxruntime's int8 logits bit for bit.
    let o = ember(&[
        "run", b, "--input", &x, "--expect", &expect, "--output", &output,
    ]);
    ok_text(&o);
    assert!(
        text(&o).contains("0 of 3600 values outside"),
        "{}",
        text(&o)
    );
    // TFLite's double rounding is within +-1 LSB, not bit for bit: an exact comparison fails and says
    // how many values differ.
    let double = dir.join("q_double.ember");
    let d = double.to_str().unwrap();
    let o = convert(
        &model("digits_qdq/model.onnx"),
        &double,
        &["--shape", "input=360,1,8,8", "--rounding", "double"],
    );
    ok_text(&o);
    let o = ember(&["run", d, "--input", &x, "--expect", &expect, "--atol", "1"]);
    ok_text(&o);
    let o = ember(&["run", d, "--input", &x, "--expect", &expect]);
    assert!(!o.status.success());
    assert!(text(&o).contains("MISMATCH"), "{}", text(&o));
    // The written output is an int8 .npy (header descr '|i1').
    let written = std::fs::read(&out_npy).unwrap();
    let header = String::from_utf8_lossy(&written[..128.min(written.len())]).into_owned();
    assert!(header.contains("'|i1'"), "{header}");
    // inspect shows the int8 tensors' quantization.
    let o = ember(&["inspect", b]);
    ok_text(&o);
    assert!(text(&o).contains("zero point -128"), "{}", text(&o));
}

#[test]
fn quantize_int8_reports_agreement_with_float() {
    let dir = scratch_dir("ptq");
    let blob = dir.join("d8.ember");
    let o = convert(
        &model("digits/model.onnx"),
        &blob,
        &[
            "--quantize",
            "int8",
            "--calibrate",
            &model("digits/calib.npy"),
        ],
    );
    let t = ok_text(&o);
    assert!(
        t.contains("float vs int8 on the calibration set: top-1"),
        "{t}"
    );
    assert!(
        t.contains("4 weight tensors (per channel), 4 biases"),
        "{t}"
    );
    // Convs, Gemms, pools, Relus, the flatten and the softmax all run on int8 data: the only
    // conversions are the input's Quantize and the output's Dequantize.
    assert!(
        t.contains(
            "int8 coverage: all 9 ops run on int8 data (2 Quantize/Dequantize at the edges)"
        ),
        "{t}"
    );
    // Without calibration data it is a clear error, and nothing is written.
    let other = dir.join("none.ember");
    let o = convert(&model("digits/model.onnx"), &other, &["--quantize", "int8"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--calibrate"), "{}", text(&o));
    assert!(!other.exists());
}
