//! `ember compare`: every layer of the digits CNN against onnxruntime's values. In float32 every layer
//! agrees (cosine > 0.9999); in int8, an error put into one convolution's weights is flagged at that
//! layer and not before, and the same model without it is not flagged there or before.
//!
//! onnxruntime runs through the test venv's Python (`cargo xtask venv`); without it the tests that
//! need it skip with a message.

mod common;

use std::path::Path;
use std::process::Command;

use common::{err_text, model, ok_text, scratch_dir, text};
use ember_convert::onnx::proto::ModelProto;
use prost::Message;

/// `ember compare` with `args`, or `None` (after saying why) when no Python with onnxruntime is found.
fn compare(test: &str, args: &[&str]) -> Option<std::process::Output> {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    let o = common::ember(&all);
    if !o.status.success() && text(&o).contains("no Python with onnx, onnxruntime and numpy") {
        eprintln!("{test}: skipped: {}", text(&o).trim());
        return None;
    }
    Some(o)
}

/// The rows of the printed table: (layer, cosine, flagged).
fn rows(out: &str) -> Vec<(String, f64, bool)> {
    out.lines()
        .skip_while(|l| !l.contains("max|err|"))
        .skip(1)
        .take_while(|l| l.starts_with("    ") || l.starts_with(" >>"))
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let flagged = t[0] == ">>";
            let layer = t[if flagged { 2 } else { 1 }].to_string();
            let cosine: f64 = t[t.len() - 2].parse().unwrap();
            (layer, cosine, flagged)
        })
        .collect()
}

#[test]
fn float_digits_agree_with_onnxruntime_at_every_layer() {
    let test = "float_digits_agree_with_onnxruntime_at_every_layer";
    let dir = scratch_dir("compare_float");
    let svg = dir.join("diff.svg");
    let onnx = model("digits/model.onnx");
    let x = model("digits/x1.npy");
    let Some(o) = compare(
        test,
        &[&onnx, "--input", &x, "--plot", svg.to_str().unwrap()],
    ) else {
        return;
    };
    let t = ok_text(&o);
    let rows = rows(&t);
    // Converted with every value kept, each of the 11 ONNX nodes is a layer of its own.
    let layers: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        layers,
        [
            "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc1", "relu3", "fc2",
            "softmax"
        ],
        "{t}"
    );
    for (layer, cosine, flagged) in &rows {
        assert!(
            *cosine > 0.9999 && !flagged,
            "{layer}: cosine {cosine}\n{t}"
        );
    }
    assert!(t.contains("every layer within the threshold"), "{t}");
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.starts_with("<svg") && plot.contains("softmax"),
        "{plot}"
    );
}

/// The digits model with `conv2`'s weights times 1.5, written to `path`.
fn inject_error(path: &Path) {
    let bytes = std::fs::read(model("digits/model.onnx")).unwrap();
    let mut m = ModelProto::decode(&bytes[..]).unwrap();
    let graph = m.graph.as_mut().unwrap();
    let w = graph
        .initializer
        .iter_mut()
        .find(|t| t.name == "conv2.w")
        .unwrap();
    if w.raw_data.is_empty() {
        w.float_data.iter_mut().for_each(|v| *v *= 1.5);
    } else {
        let scaled: Vec<u8> = w
            .raw_data
            .chunks_exact(4)
            .flat_map(|c| (f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * 1.5).to_le_bytes())
            .collect();
        w.raw_data = scaled;
    }
    std::fs::write(path, m.encode_to_vec()).unwrap();
}

/// `ember convert <onnx> -o <blob> --quantize int8`, calibrated on the digits' training samples.
fn int8(onnx: &str, blob: &Path) {
    let calib = model("digits/calib.npy");
    let o = common::convert(onnx, blob, &["--quantize", "int8", "--calibrate", &calib]);
    ok_text(&o);
}

#[test]
fn int8_error_in_one_layer_is_flagged_at_that_layer() {
    let test = "int8_error_in_one_layer_is_flagged_at_that_layer";
    let dir = scratch_dir("compare_int8");
    let onnx = model("digits/model.onnx");
    let x = model("digits/x1.npy");
    let clean = dir.join("clean.ember");
    int8(&onnx, &clean);
    let Some(o) = compare(test, &[&onnx, clean.to_str().unwrap(), "--input", &x]) else {
        return;
    };
    // Without the error, the layers up to conv2 and beyond stay within 2 steps of their scale of
    // the float values; only the softmax output, which amplifies the error of the logits, is over
    // (7.3 steps on this image).
    let t = text(&o);
    let r = rows(&t);
    let layers: Vec<&str> = r.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        layers,
        [
            "conv1+relu1",
            "pool1",
            "conv2+relu2",
            "pool2",
            "flatten",
            "fc1+relu3",
            "fc2",
            "softmax"
        ],
        "{t}"
    );
    let first = r.iter().position(|r| r.2);
    assert!(first.is_none_or(|f| f > 2), "{t}");
    assert_eq!(o.status.success(), first.is_none(), "{t}");

    let injected_onnx = dir.join("injected.onnx");
    inject_error(&injected_onnx);
    let injected = dir.join("injected.ember");
    int8(injected_onnx.to_str().unwrap(), &injected);
    let o = compare(test, &[&onnx, injected.to_str().unwrap(), "--input", &x]).unwrap();
    let t = err_text(&o);
    let r = rows(&t);
    let first: Vec<&str> = r.iter().filter(|r| r.2).map(|r| r.0.as_str()).collect();
    // The layer whose weights changed (its Conv fused with its Relu), and nothing before it.
    assert_eq!(first, ["conv2+relu2"], "{t}");
    assert!(
        t.contains("first layer over the threshold: conv2+relu2 (Conv+Relu relu2)"),
        "{t}"
    );
    assert_eq!(r.len(), 8, "{t}");
}

#[test]
fn a_missing_python_names_the_fix() {
    let o = Command::new(env!("CARGO_BIN_EXE_ember"))
        .args([
            "compare",
            &model("digits/model.onnx"),
            "--input",
            &model("digits/x1.npy"),
        ])
        .env("EMBER_PYTHON", "/nonexistent/python")
        .output()
        .unwrap();
    let t = err_text(&o);
    assert!(
        t.contains("/nonexistent/python") && t.contains("cargo xtask venv"),
        "{t}"
    );
}

#[test]
fn a_blob_without_names_is_refused_before_onnxruntime_runs() {
    let dir = scratch_dir("compare_stripped");
    let blob = dir.join("stripped.ember");
    let onnx = model("digits/model.onnx");
    ok_text(&common::convert(&onnx, &blob, &["--strip-names"]));
    let o = common::ember(&[
        "compare",
        &onnx,
        blob.to_str().unwrap(),
        "--input",
        &model("digits/x1.npy"),
    ]);
    let t = err_text(&o);
    assert!(
        t.contains("no names table") && t.contains("--strip-names"),
        "{t}"
    );
}
