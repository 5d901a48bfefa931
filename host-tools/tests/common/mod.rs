//! What the `ember` command's tests share: running the binary and reading what it printed, the bundled
//! models (`tests/models/`), fresh scratch folders, and the conversions most tests start from.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `ember` with `args`.
pub fn ember(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(args)
        .output()
        .expect("ember starts")
}

/// Runs `ember` with `args` in the folder `dir`.
pub fn ember_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("ember starts")
}

/// What `ember` printed: its stdout, then its stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// What a successful `ember` printed ([`text`]); fails the test with it if `ember` failed.
pub fn ok_text(o: &Output) -> String {
    let t = text(o);
    assert!(o.status.success(), "{t}");
    t
}

/// What a failed `ember` printed ([`text`]); fails the test if `ember` succeeded.
pub fn err_text(o: &Output) -> String {
    let t = text(o);
    assert!(!o.status.success(), "{t}");
    t
}

/// The repository's `tests/models` folder.
pub fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models")
}

/// The path of `tests/models/<rel>`, as an argument.
pub fn model(rel: &str) -> String {
    models().join(rel).to_string_lossy().into_owned()
}

/// An empty folder `name` under the test's temporary folder (emptied if a previous run left it).
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `ember convert <onnx> -o <blob>`, then `extra`.
pub fn convert(onnx: &str, blob: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["convert", onnx, "-o", blob.to_str().unwrap()];
    args.extend_from_slice(extra);
    ember(&args)
}

/// The digits model (`tests/models/digits/model.onnx`, batch 1) converted into `dir/<file>`, which it
/// returns; fails the test with ember's output if the conversion does.
pub fn digits_blob(dir: &Path, file: &str) -> PathBuf {
    let blob = dir.join(file);
    let out = convert(&model("digits/model.onnx"), &blob, &[]);
    assert!(out.status.success(), "{}", text(&out));
    blob
}

/// `ember <command> <blob> --input <one digit image>` (`tests/models/digits/x1.npy`), then `extra`.
pub fn on_digit(command: &str, blob: &Path, extra: &[&str]) -> Output {
    on_input(command, blob, &model("digits/x1.npy"), extra)
}

/// `ember <command> <blob> --input <input>`, then `extra`.
pub fn on_input(command: &str, blob: &Path, input: &str, extra: &[&str]) -> Output {
    let mut args = vec![command, blob.to_str().unwrap(), "--input", input];
    args.extend_from_slice(extra);
    ember(&args)
}

/// A `.npy` file of `shape` with element type `descr` (`<f4`, `<i8`, ...) holding `data`.
pub fn npy_bytes(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
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

/// Writes a float32 `.npy` file.
pub fn write_npy_f32(path: &Path, shape: &[usize], values: &[f32]) {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, npy_bytes("<f4", shape, &data)).unwrap();
}
