//! `ember convert model.tflite` as a TFLite user runs it: int8 tensors stay int8 end to end and give
//! TFLM's bytes (TFLite's double rounding is the default for a `.tflite`), outputs bind by name, and
//! an op Ember does not have is refused naming it, with no file written.

mod common;

use std::path::Path;

use common::{convert, ember, err_text, ok_text, scratch_dir};

/// `converter/tests/models/tflite/<file>` (made by `make.py` there; goldens from TFLM and LiteRT).
fn case(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../converter/tests/models/tflite")
        .join(file)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn an_int8_tflite_runs_bit_for_bit_with_tflm_from_int8_npy_files() {
    let dir = scratch_dir("tflite_int8");
    let blob = dir.join("m.ember");
    ok_text(&convert(&case("int8_conv_pool.tflite"), &blob, &[]));
    let inspect = ok_text(&ember(&["inspect", blob.to_str().unwrap()]));
    assert!(inspect.contains("int8 scale="), "{inspect}");
    // TFLM's int8 output, compared as integers with no tolerance.
    let run = ok_text(&expect_tflm(&blob));
    assert!(run.contains("ok"), "{run}");
    // Single rounding, asked for, is not TFLM's arithmetic: the same check then fails.
    let single = dir.join("single.ember");
    ok_text(&convert(
        &case("int8_conv_pool.tflite"),
        &single,
        &["--rounding", "single"],
    ));
    err_text(&expect_tflm(&single));
}

/// `ember run` of an `int8_conv_pool` blob on its golden input, expecting TFLM's int8 output exactly.
fn expect_tflm(blob: &Path) -> std::process::Output {
    ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &case("int8_conv_pool.x.npy"),
        "--expect",
        &case("int8_conv_pool.y.npy"),
        "--atol",
        "0",
    ])
}

#[test]
fn outputs_bind_by_name_in_any_order() {
    let dir = scratch_dir("tflite_names");
    let blob = dir.join("m.ember");
    ok_text(&convert(&case("mean.tflite"), &blob, &[]));
    let inspect = ok_text(&ember(&["inspect", blob.to_str().unwrap()]));
    let names: Vec<String> = inspect
        .lines()
        .filter_map(|l| l.trim().strip_prefix("output"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert_eq!(names.len(), 2, "{inspect}");
    let run = ok_text(&ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &case("mean.x.npy"),
        "--expect",
        &format!("{}={}", names[1], case("mean.y1.npy")),
        "--expect",
        &format!("{}={}", names[0], case("mean.y0.npy")),
        "--atol",
        "1e-6",
    ]));
    assert!(run.contains("ok"), "{run}");
}

#[test]
fn an_unsupported_tflite_op_names_index_op_and_version_and_writes_nothing() {
    let dir = scratch_dir("tflite_unsupported");
    let blob = dir.join("u.ember");
    let t = err_text(&convert(&case("unsupported_builtin.tflite"), &blob, &[]));
    assert!(t.contains("operator 1 (BUCKETIZE, version 1)"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    assert!(!blob.exists());
    assert!(!dir.join("u.ember.tmp").exists());
}
