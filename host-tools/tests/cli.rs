//! The `ember` command end to end: convert, inspect, run against onnxruntime's outputs, and the errors a
//! user sees for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ember(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(args)
        .output()
        .expect("ember starts")
}

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models")
}

fn model(rel: &str) -> String {
    models().join(rel).to_string_lossy().into_owned()
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn convert_then_run_matches_onnxruntime_batch_1() {
    let dir = scratch_dir("batch1");
    let blob = dir.join("digits.ember");
    let out = ember(&[
        "convert",
        &model("digits/model.onnx"),
        "-o",
        blob.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    // The symbolic batch dimension is fixed to 1 with a notice.
    assert!(text(&out).contains("notice"), "{}", text(&out));
    let y = dir.join("y.npy");
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &model("digits/x1.npy"),
        "--expect",
        &model("digits/y1.npy"),
        "--atol",
        "1e-4",
        "--output",
        y.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("ok"), "{}", text(&out));
    assert!(y.exists());
}

#[test]
fn convert_with_shape_runs_the_whole_test_set_by_name() {
    let dir = scratch_dir("batch360");
    let blob = dir.join("digits360.ember");
    let out = ember(&[
        "convert",
        &model("digits/model.onnx"),
        "-o",
        blob.to_str().unwrap(),
        "--shape",
        "input=360,1,8,8",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &format!("input={}", model("digits/x.npy")),
        "--expect",
        &format!("probs={}", model("digits/y.npy")),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let out = ember(&["inspect", blob.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    for needle in [
        "Conv2d",
        "MaxPool2d",
        "FullyConnected",
        "Softmax",
        "arena",
        "weights",
        "[360, 10]",
    ] {
        assert!(t.contains(needle), "inspect output lacks {needle:?}:\n{t}");
    }
}

#[test]
fn a_mismatch_exits_non_zero_with_the_largest_difference() {
    let dir = scratch_dir("mismatch");
    let blob = dir.join("d.ember");
    assert!(ember(&[
        "convert",
        &model("digits/model.onnx"),
        "-o",
        blob.to_str().unwrap()
    ])
    .status
    .success());
    // Expect all zeros: the probabilities sum to 1, so some value differs by at least 0.1.
    let zeros = dir.join("zeros.npy");
    write_npy_f32(&zeros, &[1, 10], &[0.0; 10]);
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &model("digits/x1.npy"),
        "--expect",
        zeros.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("MISMATCH") && text(&out).contains("max |diff|"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_wrong_input_shape_names_the_input_and_both_shapes() {
    let dir = scratch_dir("wrongshape");
    let blob = dir.join("d.ember");
    assert!(ember(&[
        "convert",
        &model("digits/model.onnx"),
        "-o",
        blob.to_str().unwrap()
    ])
    .status
    .success());
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &model("digits/x.npy"),
    ]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("\"input\"") && t.contains("[1, 1, 8, 8]") && t.contains("[360, 1, 8, 8]"),
        "{t}"
    );
    assert!(t.contains("--shape input=360,1,8,8"), "{t}");
    // A float64 file is refused with a hint, not misread.
    let f64_file = dir.join("x64.npy");
    std::fs::write(&f64_file, npy_bytes("<f8", &[1, 1, 8, 8], &[0u8; 512])).unwrap();
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        f64_file.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("float32"), "{}", text(&out));
}

#[test]
fn an_unsupported_op_names_node_and_op_and_writes_nothing() {
    let dir = scratch_dir("unsupported");
    let blob = dir.join("u.ember");
    let out = ember(&[
        "convert",
        &model("invalid/unsupported_op.onnx"),
        "-o",
        blob.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("the_hardmax") && t.contains("Hardmax") && t.contains("13"),
        "{t}"
    );
    assert!(
        !t.contains("panicked") && !t.contains("RUST_BACKTRACE"),
        "{t}"
    );
    assert!(!blob.exists());
    assert!(!dir.join("u.ember.tmp").exists());
}

#[test]
fn a_dynamic_inner_dimension_is_an_error_unless_fixed() {
    let dir = scratch_dir("dynamic");
    let blob = dir.join("d.ember");
    let out = ember(&[
        "convert",
        &model("invalid/dynamic_dim.onnx"),
        "-o",
        blob.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("\"x\""), "{}", text(&out));
    let out = ember(&[
        "convert",
        &model("invalid/dynamic_dim.onnx"),
        "-o",
        blob.to_str().unwrap(),
        "--shape",
        "x=1,7",
    ]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_3d_conv_is_refused_with_the_node_name() {
    let dir = scratch_dir("conv3d");
    let out = ember(&[
        "convert",
        &model("invalid/conv3d.onnx"),
        "-o",
        dir.join("c.ember").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("conv3d"), "{}", text(&out));
}

#[test]
fn a_corrupt_blob_is_a_clear_error() {
    let dir = scratch_dir("corrupt");
    let blob = dir.join("d.ember");
    assert!(ember(&[
        "convert",
        &model("digits/model.onnx"),
        "-o",
        blob.to_str().unwrap()
    ])
    .status
    .success());
    let mut bytes = std::fs::read(&blob).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    std::fs::write(&blob, &bytes).unwrap();
    let out = ember(&["inspect", blob.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("checksum"), "{}", text(&out));
}

fn npy_bytes(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn write_npy_f32(path: &Path, shape: &[usize], values: &[f32]) {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, npy_bytes("<f4", shape, &data)).unwrap();
}

#[test]
fn repeated_runs_and_the_profile_keep_the_outputs_right() {
    // A run consumes its inputs (later ops reuse their bytes); `--repeat` must rewrite them each time.
    let dir = scratch_dir("repeat");
    let blob = dir.join("d.ember");
    assert!(ember(&[
        "convert",
        &model("digits/model.onnx"),
        "-o",
        blob.to_str().unwrap()
    ])
    .status
    .success());
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &model("digits/x1.npy"),
        "--expect",
        &model("digits/y1.npy"),
        "--repeat",
        "3",
        "--profile",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    for needle in ["profile", "conv1+relu1", "Conv2d", "softmax", "%"] {
        assert!(t.contains(needle), "profile lacks {needle:?}:\n{t}");
    }
}
