//! The `ember` command end to end: convert, inspect, run against onnxruntime's outputs, and the errors a
//! user sees for bad input.

mod common;

use std::path::Path;
use std::process::Output;

use common::{
    convert, digits_blob, ember, err_text, model, npy_bytes, ok_text, on_digit, scratch_dir, text,
    write_npy_f32,
};

#[test]
fn convert_then_run_matches_onnxruntime_batch_1() {
    let dir = scratch_dir("batch1");
    let blob = dir.join("digits.ember");
    let out = convert(&model("digits/model.onnx"), &blob, &[]);
    ok_text(&out);
    // The symbolic batch dimension is fixed to 1 with a notice.
    assert!(text(&out).contains("notice"), "{}", text(&out));
    let y = dir.join("y.npy");
    let out = on_digit(
        "run",
        &blob,
        &[
            "--expect",
            &model("digits/y1.npy"),
            "--atol",
            "1e-4",
            "--output",
            y.to_str().unwrap(),
        ],
    );
    ok_text(&out);
    assert!(text(&out).contains("ok"), "{}", text(&out));
    assert!(y.exists());
}

#[test]
fn profile_prints_every_op() {
    let blob = digits_blob(&scratch_dir("profile"), "digits.ember");
    let out = on_digit("profile", &blob, &[]);
    ok_text(&out);
    let t = text(&out);
    assert!(t.contains("profile (median per op"), "{t}");
    for op in ["Conv2d", "MaxPool2d", "FullyConnected", "Softmax"] {
        assert!(t.contains(op), "{op} missing: {t}");
    }
}

#[test]
fn convert_with_shape_runs_the_whole_test_set_by_name() {
    let blob = scratch_dir("batch360").join("digits360.ember");
    let out = convert(
        &model("digits/model.onnx"),
        &blob,
        &["--shape", "input=360,1,8,8"],
    );
    ok_text(&out);
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &format!("input={}", model("digits/x.npy")),
        "--expect",
        &format!("probs={}", model("digits/y.npy")),
    ]);
    ok_text(&out);
    let out = ember(&["inspect", blob.to_str().unwrap()]);
    ok_text(&out);
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
    let blob = digits_blob(&dir, "d.ember");
    // Expect all zeros: the probabilities sum to 1, so some value differs by at least 0.1.
    let zeros = dir.join("zeros.npy");
    write_npy_f32(&zeros, &[1, 10], &[0.0; 10]);
    let out = on_digit("run", &blob, &["--expect", zeros.to_str().unwrap()]);
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
    let blob = digits_blob(&dir, "d.ember");
    let out = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        &model("digits/x.npy"),
    ]);
    let t = err_text(&out);
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
    let out = convert(&model("invalid/unsupported_op.onnx"), &blob, &[]);
    let t = err_text(&out);
    assert!(
        t.contains("the_det") && t.contains("Det") && t.contains("13"),
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
    let out = convert(&model("invalid/dynamic_dim.onnx"), &blob, &[]);
    assert!(!out.status.success());
    assert!(text(&out).contains("\"x\""), "{}", text(&out));
    let out = convert(
        &model("invalid/dynamic_dim.onnx"),
        &blob,
        &["--shape", "x=1,7"],
    );
    ok_text(&out);
    // `ember bench model.onnx --input x.npy` takes the dims from the file, dynamic ones included.
    let x = dir.join("x.npy");
    write_npy_f32(&x, &[1, 7], &[-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]);
    let out = ember(&[
        "bench",
        &model("invalid/dynamic_dim.onnx"),
        "--input",
        x.to_str().unwrap(),
        "--json",
        "--repeat",
        "2",
        "--warmup",
        "0",
    ]);
    ok_text(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"ops\":1"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_model_without_inputs_runs_without_input_files() {
    // ONNX's `test_constant` kind of model: the output comes from constants alone.
    let dir = scratch_dir("no_inputs");
    let blob = dir.join("c.ember");
    ok_text(&convert(&model("no_inputs/model.onnx"), &blob, &[]));
    let expect = model("no_inputs/y.npy");
    let out = ember(&["run", blob.to_str().unwrap(), "--expect", &expect]);
    ok_text(&out);
    // A model with an input still says which file is missing.
    let digits = digits_blob(&dir, "d.ember");
    let err = err_text(&ember(&["run", digits.to_str().unwrap()]));
    assert!(err.contains("no file given for input"), "{err}");
}

#[test]
fn a_3d_conv_is_refused_with_the_node_name() {
    let dir = scratch_dir("conv3d");
    let out = convert(&model("invalid/conv3d.onnx"), &dir.join("c.ember"), &[]);
    assert!(!out.status.success());
    assert!(text(&out).contains("conv3d"), "{}", text(&out));
}

#[test]
fn a_corrupt_blob_is_a_clear_error() {
    let blob = digits_blob(&scratch_dir("corrupt"), "d.ember");
    let mut bytes = std::fs::read(&blob).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    std::fs::write(&blob, &bytes).unwrap();
    let out = ember(&["inspect", blob.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("checksum"), "{}", text(&out));
}

#[test]
fn a_shorter_input_runs_padded_where_the_blob_allows_it() {
    // 30 frames of the keyword model's features: no variant has 30, the 49-frame one covers it. With
    // `--pad input=0` it runs there padded with zeros (the same output as the frames zero-padded by
    // hand); without it, it is an error that says how to allow it.
    let dir = scratch_dir("kws_padded");
    let x49 = std::fs::read(model("kws/lengths/x49.npy")).unwrap();
    let x49: Vec<f32> = npyz::NpyFile::new(&x49[..]).unwrap().into_vec().unwrap();
    let (channels, frames) = (10, 30);
    let short: Vec<f32> = (0..channels)
        .flat_map(|c| x49[c * 49..][..frames].to_vec())
        .collect();
    let padded: Vec<f32> = (0..channels)
        .flat_map(|c| {
            let mut row = short[c * frames..][..frames].to_vec();
            row.resize(49, 0.0);
            row
        })
        .collect();
    let (x30, x30_49) = (dir.join("x30.npy"), dir.join("x30_49.npy"));
    write_npy_f32(&x30, &[1, channels, frames], &short);
    write_npy_f32(&x30_49, &[1, channels, 49], &padded);
    let (x30, x30_49) = (x30.to_str().unwrap(), x30_49.to_str().unwrap());
    let shape = ["--dim", "T=25,49,97", "--shape", "input=1,10,T"];

    let blob = dir.join("padded.ember");
    let out = convert(
        &model("kws/lengths/model.onnx"),
        &blob,
        &[&shape[..], &["--pad", "input=0"]].concat(),
    );
    assert!(
        text(&out).contains("padded: input with 0"),
        "{}",
        text(&out)
    );
    let blob = blob.to_str().unwrap();
    let (y, y_by_hand) = (dir.join("y.npy"), dir.join("y_by_hand.npy"));
    let out = ember(&["run", blob, "--input", x30, "--output", y.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out)
            .contains(r#"padded input "input" [1, 10, 30] -> [1, 10, 49] with 0: variant T=49"#),
        "{}",
        text(&out)
    );
    let out = ember(&[
        "run",
        blob,
        "--input",
        x30_49,
        "--output",
        y_by_hand.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(&y).unwrap(),
        std::fs::read(&y_by_hand).unwrap()
    );

    let strict = dir.join("strict.ember");
    ok_text(&convert(&model("kws/lengths/model.onnx"), &strict, &shape));
    let out = ember(&["run", strict.to_str().unwrap(), "--input", x30]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("no shape variant of the model takes inputs of shape [1, 10, 30]"),
        "{said}"
    );
    assert!(said.contains("--pad NAME=VALUE"), "{said}");
    assert!(said.contains("T=49: inputs [1, 10, 49]"), "{said}");
}

#[test]
fn a_npy_header_that_lies_about_its_size_is_an_error() {
    // Found by fuzzing the .npy reader: a shape whose element count overflows made `ember run` panic
    // ("attempt to multiply with overflow") before it read any data.
    let dir = scratch_dir("npy-sizes");
    let blob = digits_blob(&dir, "d.ember");
    for (shape, want) in [
        (
            &[1usize << 32, (1 << 32) + 1][..],
            "over the element budget",
        ),
        (&[1_000_000_000_000][..], "the file holds 16"),
        (&[1, 1, 8, 8][..], "needs 256 bytes, the file holds 16"),
    ] {
        let x = dir.join("x.npy");
        std::fs::write(&x, npy_bytes("<f4", shape, &[0; 16])).unwrap();
        let out = ember(&[
            "run",
            blob.to_str().unwrap(),
            "--input",
            x.to_str().unwrap(),
        ]);
        let t = text(&out);
        assert!(!out.status.success(), "{t}");
        assert!(
            t.contains(want) && t.contains("x.npy") && !t.contains("panicked"),
            "{t}"
        );
    }
}

#[test]
fn repeated_runs_and_the_profile_keep_the_outputs_right() {
    // A run consumes its inputs (later ops reuse their bytes); `--repeat` must rewrite them each time.
    let blob = digits_blob(&scratch_dir("repeat"), "d.ember");
    let out = on_digit(
        "run",
        &blob,
        &[
            "--expect",
            &model("digits/y1.npy"),
            "--repeat",
            "3",
            "--profile",
        ],
    );
    ok_text(&out);
    let t = text(&out);
    for needle in ["profile", "conv1+relu1", "Conv2d", "softmax", "%"] {
        assert!(t.contains(needle), "profile lacks {needle:?}:\n{t}");
    }
}

#[test]
fn inspect_passes_shows_what_each_pass_changed_then_the_blob() {
    let out = ember(&[
        "inspect",
        &model("digits/model.onnx"),
        "--passes",
        "--shape",
        "input=4,1,8,8",
    ]);
    ok_text(&out);
    let t = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "pass applications",
        "fuse_activation",
        "11 -> 8",
        "conv1 + relu1 -> conv1+relu1",
        "conv2 + relu2 -> conv2+relu2",
        "fc1 + relu3 -> fc1+relu3",
        "transpose input.to_nhwc inserted: Transpose[0, 2, 3, 1]",
        "transpose pool2.to_nchw inserted: Transpose[0, 3, 1, 2]",
        "transpose input.to_nhwc removed",
        "(no change)",
        // The blob inspection follows, at the --shape batch.
        "arena",
        "Conv2d",
        "[4, 10]",
    ] {
        assert!(
            t.contains(needle),
            "inspect --passes lacks {needle:?}:\n{t}"
        );
    }
    let log = t.find("fuse_activation").unwrap();
    let blob = t.find("MaxPool2d").unwrap();
    assert!(log < blob, "the pass log comes before the blob:\n{t}");
}

#[test]
fn inspect_passes_of_a_blob_says_to_pass_the_onnx_model() {
    let blob = digits_blob(&scratch_dir("inspect_passes_blob"), "d.ember");
    let out = ember(&["inspect", blob.to_str().unwrap(), "--passes"]);
    let t = err_text(&out);
    assert!(
        t.contains("only known when converting from ONNX") && t.contains(".onnx"),
        "{t}"
    );
    assert!(!t.contains("panicked"), "{t}");
}

/// `ember inspect model.onnx` converts in memory and shows the same blob view as the converted file;
/// a file that is neither a blob nor ONNX is refused with both named.
#[test]
fn inspect_of_an_onnx_model_shows_the_blob_it_converts_to() {
    let dir = scratch_dir("inspect_onnx");
    let blob = digits_blob(&dir, "d.ember");
    let from_onnx = ember(&["inspect", &model("digits/model.onnx")]);
    ok_text(&from_onnx);
    let from_blob = ember(&["inspect", blob.to_str().unwrap()]);
    ok_text(&from_blob);
    // The same lines after the first (which names the file).
    let body = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(&from_onnx), body(&from_blob));
    assert!(text(&from_onnx).contains("converting it in memory"));

    let junk = dir.join("junk.bin");
    std::fs::write(&junk, b"neither a blob nor a model").unwrap();
    let out = ember(&["inspect", junk.to_str().unwrap()]);
    let t = err_text(&out);
    assert!(
        t.contains("not an .ember blob") && t.contains("ONNX"),
        "{t}"
    );
    assert!(!t.contains("panicked"), "{t}");
}

/// The element names of `xml`'s tags, checked to nest properly (a small stand-in for an XML parser).
fn xml_elements(xml: &str) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("every tag closes") + start;
        let tag = &rest[start + 1..end];
        assert!(!tag.contains('<'), "a tag inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else {
            let name: String = tag
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '/')
                .collect();
            seen.push(name.clone());
            if !tag.ends_with('/') {
                open.push(name);
            }
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed {open:?}");
    seen
}

#[test]
fn inspect_plots_the_arena_with_one_rectangle_per_arena_tensor() {
    let dir = scratch_dir("plot");
    let blob = digits_blob(&dir, "d.ember");
    let svg = dir.join("plan.svg");
    let out = ember(&[
        "inspect",
        blob.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    ok_text(&out);
    let listing = text(&out);
    assert!(listing.contains("wrote"), "{listing}");
    let arena_tensors = listing.matches("arena @").count();
    assert!(arena_tensors > 3, "{listing}");

    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.trim_end().ends_with("</svg>"));
    let elements = xml_elements(&plot);
    assert_eq!(elements.iter().filter(|e| *e == "svg").count(), 1);
    assert_eq!(
        elements.iter().filter(|e| *e == "rect").count(),
        arena_tensors
    );
    assert_eq!(plot.matches(r#"class="tensor""#).count(), arena_tensors);
    // Every arena tensor is named in its rectangle's title; the lower bound and total are drawn.
    for line in listing.lines().filter(|l| l.contains("arena @")) {
        let name = line.split_whitespace().nth(1).unwrap();
        assert!(
            plot.contains(&format!("<title>{name} ")),
            "{name} missing:\n{plot}"
        );
    }
    assert!(plot.contains(r#"class="lower-bound""#) && plot.contains(r#"class="planned""#));
    assert!(plot.contains("lower bound") && plot.contains("planned"));
}

#[test]
fn bench_json_reports_greedy_bytes_for_onnx_and_null_for_a_blob() {
    let onnx = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../converter/tests/models/ops/conv_variants.onnx")
        .to_string_lossy()
        .into_owned();
    let json = |out: &Output| -> serde_json::Value {
        assert!(out.status.success(), "{}", text(out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
    };
    let quick = ["--json", "--repeat", "2", "--warmup", "0"];
    let v = json(&ember(&[&["bench", onnx.as_str()][..], &quick].concat()));
    let greedy = v["greedy_activation_bytes"].as_u64().unwrap();
    let planned = v["activation_bytes"].as_u64().unwrap();
    // Greedy needs 7,072 bytes here; the planner reaches the lower bound, 5,376.
    assert_eq!((greedy, planned), (7072, 5376), "{v}");
    assert_eq!(v["lower_bound_bytes"].as_u64(), Some(5376));

    let dir = scratch_dir("bench_json");
    let blob = dir.join("c.ember");
    let out = convert(&onnx, &blob, &[]);
    ok_text(&out);
    let v = json(&ember(
        &[&["bench", blob.to_str().unwrap()][..], &quick].concat(),
    ));
    assert!(v["greedy_activation_bytes"].is_null(), "{v}");
    assert_eq!(v["activation_bytes"].as_u64(), Some(5376));
}

#[test]
fn dscnn_and_kws_match_onnxruntime_through_the_cli() {
    // (folder, --shape of the whole golden set): the BatchNorm/ReLU6 MobileNet-style CNN and the 1-D
    // keyword-spotting CNN, at batch 1 and on every golden sample.
    for (name, whole) in [("dscnn", "input=360,1,8,8"), ("kws", "input=48,10,49")] {
        let dir = scratch_dir(&format!("e2e_{name}"));
        for (suffix, shape) in [("1", None), ("", Some(whole))] {
            let blob = dir.join(format!("{name}{suffix}.ember"));
            let onnx = model(&format!("{name}/model.onnx"));
            let mut args = vec!["convert", &onnx, "-o", blob.to_str().unwrap()];
            if let Some(s) = shape {
                args.extend(["--shape", s]);
            }
            let out = ember(&args);
            assert!(out.status.success(), "{name}: {}", text(&out));
            let out = ember(&[
                "run",
                blob.to_str().unwrap(),
                "--input",
                &model(&format!("{name}/x{suffix}.npy")),
                "--expect",
                &model(&format!("{name}/y{suffix}.npy")),
                "--atol",
                "1e-4",
            ]);
            assert!(out.status.success(), "{name}{suffix}: {}", text(&out));
            assert!(text(&out).contains("ok"), "{}", text(&out));
        }
    }
}

#[test]
fn one_kws_blob_runs_and_benches_every_input_length() {
    // The keyword model with an open frame count, converted for three lengths: each length runs on its
    // own variant and matches onnxruntime's answer for it; `bench` with one file per length times each
    // and reports a row per variant.
    let dir = scratch_dir("kws_lengths");
    let blob = dir.join("kws.ember");
    let out = convert(
        &model("kws/lengths/model.onnx"),
        &blob,
        &["--dim", "T=25,49,97", "--shape", "input=1,10,T"],
    );
    ok_text(&out);
    let blob = blob.to_str().unwrap();
    let inputs: Vec<String> = [25, 49, 97]
        .iter()
        .map(|t| model(&format!("kws/lengths/x{t}.npy")))
        .collect();
    for (t, x) in [25, 49, 97].iter().zip(&inputs) {
        let expect = model(&format!("kws/lengths/y{t}.npy"));
        let out = ember(&[
            "run", blob, "--input", x, "--expect", &expect, "--atol", "1e-5",
        ]);
        assert!(out.status.success(), "T={t}: {}", text(&out));
        assert!(text(&out).contains(": ok"), "T={t}: {}", text(&out));
    }
    let mut args = vec!["bench", blob, "--json", "--repeat", "2", "--warmup", "0"];
    for x in &inputs {
        args.extend(["--input", x.as_str()]);
    }
    let out = ember(&args);
    assert!(out.status.success(), "{}", text(&out));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let variants: Vec<&str> = rows.iter().filter_map(|r| r["variant"].as_str()).collect();
    assert_eq!(variants, ["T=25", "T=49", "T=97"], "{rows:?}");
    // Switching between them in one session allocated nothing, and every run gave what a fresh
    // session gives.
    for r in &rows {
        assert_eq!(r["allocations"].as_u64(), Some(0), "{r}");
        assert_eq!(r["outputs_match"].as_bool(), Some(true), "{r}");
    }
    let activations: Vec<u64> = rows
        .iter()
        .filter_map(|r| r["activation_bytes"].as_u64())
        .collect();
    assert!(
        activations.len() == 3 && activations.windows(2).all(|w| w[0] < w[1]),
        "{activations:?}"
    );
    // `inspect --plot` draws a lane per variant.
    let svg = dir.join("kws.svg");
    let out = ember(&["inspect", blob, "--plot", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(plot.matches(r#"<g class="variant""#).count(), 3, "{plot}");
    for (t, bytes) in [25, 49, 97].iter().zip(&activations) {
        let title = format!("Activation arena of variant T={t}: {bytes} bytes planned");
        assert!(plot.contains(&title), "{title} missing");
    }
}
