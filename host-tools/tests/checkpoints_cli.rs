//! `ember convert --weights` end to end: each checkpoint layout bound to a graph whose own weights are
//! random reproduces the digits goldens through `ember run`; hostile pickles are refused, write no
//! file and run nothing; missing, extra, mis-shaped and unconvertible weights give their messages;
//! `--strict`, `--rename`, `--lora`, `--quantize int8 --calibrate`, `--emit rust` and
//! `ember inspect --weights` work with it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{ember_in, model, ok_text, on_digit, text};

use ember_convert::weights::{Checkpoint, ElementType, Tensor};

fn ckpt(rel: &str) -> String {
    model(&format!("checkpoints/{rel}"))
}

/// A fresh scratch folder, prefixed so that it does not collide with the other CLI tests'.
fn scratch_dir(name: &str) -> PathBuf {
    common::scratch_dir(&format!("ckpt_{name}"))
}

/// Converts `digits_random.onnx` (batch 360) with `extra` arguments into `dir/out.ember`.
fn convert(dir: &Path, extra: &[&str]) -> (Output, PathBuf) {
    let out = dir.join("out.ember");
    (convert_into(dir, &out, extra), out)
}

/// Converts `digits_random.onnx` (batch 360) with `extra` arguments into `out`, in `dir`.
fn convert_into(dir: &Path, out: &Path, extra: &[&str]) -> Output {
    let graph = ckpt("digits_random.onnx");
    let mut args = vec![
        "convert",
        graph.as_str(),
        "--shape",
        "input=360,1,8,8",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ember_in(dir, &args)
}

/// Runs `blob` on the digits test images against `expect` within `atol`.
fn run_expect(dir: &Path, blob: &Path, expect: &str, atol: &str) -> Output {
    ember_in(
        dir,
        &[
            "run",
            blob.to_str().unwrap(),
            "--input",
            &model("digits/x.npy"),
            "--expect",
            expect,
            "--atol",
            atol,
        ],
    )
}

#[test]
fn every_layout_binds_and_reproduces_the_digits_goldens() {
    let cases: [(&str, &[&str], String); 5] = [
        ("digits_zip.pt", &[], model("digits/y.npy")),
        ("digits_legacy.pt", &[], model("digits/y.npy")),
        ("digits_bf16.safetensors", &[], ckpt("y_bf16.npy")),
        (
            "digits.npz",
            &["--rename", "backbone.="],
            model("digits/y.npy"),
        ),
        (
            "digits.npz",
            &["--rename", r"re:^backbone\.(.*)=$1"],
            model("digits/y.npy"),
        ),
    ];
    for (i, (file, extra, golden)) in cases.iter().enumerate() {
        let dir = scratch_dir(&format!("layout{i}"));
        let weights = ckpt(file);
        let mut args = vec!["--weights", weights.as_str()];
        args.extend_from_slice(extra);
        let (o, blob) = convert(&dir, &args);
        assert!(o.status.success(), "{file}: {}", text(&o));
        assert!(
            text(&o).contains("bound 8 initializers from"),
            "{}",
            text(&o)
        );
        let o = run_expect(&dir, &blob, golden, "1e-4");
        assert!(o.status.success(), "{file}: {}", text(&o));
        assert!(text(&o).contains("ok"), "{}", text(&o));
    }
    // Without weights the random graph misses the goldens by far.
    let dir = scratch_dir("random");
    let (o, blob) = convert(&dir, &[]);
    ok_text(&o);
    let o = run_expect(&dir, &blob, &model("digits/y.npy"), "1e-4");
    assert!(!o.status.success(), "{}", text(&o));
}

/// make.py's MARKER: what a hostile pickle would create in the working directory if it ran.
const MARKER: &str = "ember-pickle-was-executed";

#[test]
fn hostile_checkpoints_are_refused_write_nothing_and_run_nothing() {
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ckpt("hostile/expected.json")).unwrap()).unwrap();
    let mut n = 0;
    for (name, must) in expected.as_object().unwrap() {
        let must = must.as_str().unwrap();
        let files = if name == "load_from_bytes" {
            vec![format!("hostile/{name}.pkl")]
        } else {
            vec![
                format!("hostile/{name}_zip.pt"),
                format!("hostile/{name}_legacy.pt"),
            ]
        };
        for f in files {
            let dir = scratch_dir(&format!("hostile_{n}"));
            n += 1;
            let weights = ckpt(&f);
            let (o, blob) = convert(&dir, &["--weights", &weights]);
            let t = text(&o);
            assert!(!o.status.success(), "{f}: {t}");
            assert!(t.contains(must), "{f}: {t}");
            assert!(!blob.exists(), "{f} wrote {}", blob.display());
            assert!(!dir.join(MARKER).exists(), "{f} ran its payload");
            assert_eq!(
                std::fs::read_dir(&dir).unwrap().count(),
                0,
                "{f} left files"
            );
        }
    }
    assert_eq!(n, 15);
}

/// Writes a safetensors file of these tensors (the format: a little-endian u64 header length, the
/// JSON header, the data).
fn write_safetensors(path: &Path, tensors: &[(&str, &Tensor<'_>)]) {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, t) in tensors {
        let start = data.len();
        data.extend_from_slice(t.bytes());
        header.insert(
            name.to_string(),
            serde_json::json!({
                "dtype": t.dtype().name(),
                "shape": t.shape(),
                "data_offsets": [start, data.len()],
            }),
        );
    }
    let mut h = serde_json::to_vec(&header).unwrap();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    std::fs::write(path, out).unwrap();
}

/// The digits weights (PyTorch names) with `edit` applied, written as safetensors in `dir`.
fn edited(dir: &Path, edit: impl FnOnce(&mut Checkpoint<'static>)) -> String {
    let bytes = std::fs::read(ckpt("digits_zip.pt")).unwrap();
    let mut c = Checkpoint::parse(&bytes).unwrap().into_owned();
    edit(&mut c);
    let path = dir.join("edited.safetensors");
    let tensors: Vec<(&str, &Tensor<'_>)> = c.iter().collect();
    write_safetensors(&path, &tensors);
    // Kept outside the scratch dir's checks by the callers that count files.
    path.to_string_lossy().into_owned()
}

/// Converts with the edited checkpoint and returns the failure's text, checking no blob was written.
fn bind_error(name: &str, extra: &[&str], edit: impl FnOnce(&mut Checkpoint<'static>)) -> String {
    let dir = scratch_dir(name);
    let weights = edited(&dir, edit);
    let mut args = vec!["--weights", weights.as_str()];
    args.extend_from_slice(extra);
    let (o, blob) = convert(&dir, &args);
    assert!(!o.status.success(), "{name}: {}", text(&o));
    assert!(!blob.exists(), "{name} wrote a blob");
    text(&o)
}

#[test]
fn binding_errors_name_every_tensor_concerned() {
    let missing = bind_error("missing", &[], |c| {
        c.remove("conv1.weight");
        c.remove("fc2.bias");
    });
    assert!(
        missing.contains("2 problems (no file written)"),
        "{missing}"
    );
    assert!(
        missing.contains(
            "initializer \"conv1.weight\" [8, 1, 3, 3] FLOAT has no tensor in the checkpoint"
        ),
        "{missing}"
    );
    assert!(
        missing.contains("initializer \"fc2.bias\" [10] FLOAT has no tensor"),
        "{missing}"
    );

    let misshaped = bind_error("misshaped", &[], |c| {
        c.remove("fc1.weight");
        c.insert(
            "fc1.weight",
            Tensor::from_f32(vec![32, 63], &[0.5; 2016]).unwrap(),
        )
        .unwrap();
    });
    assert!(
        misshaped.contains(
            "tensor \"fc1.weight\" [32, 63] F32 for initializer \"fc1.weight\" [32, 64] FLOAT: \
             2016 elements where 2048 are needed"
        ),
        "{misshaped}"
    );

    let unconvertible = bind_error("unconvertible", &[], |c| {
        c.remove("fc1.bias");
        c.insert(
            "fc1.bias",
            Tensor::owned(ElementType::I32, vec![32], vec![1; 128]).unwrap(),
        )
        .unwrap();
    });
    assert!(
        unconvertible.contains(
            "tensor \"fc1.bias\" [32] I32 for initializer \"fc1.bias\" [32] FLOAT: its element type \
             I32 cannot be converted to the initializer's FLOAT: integers do not bind to float weights"
        ),
        "{unconvertible}"
    );

    let add_extra = |c: &mut Checkpoint<'static>| {
        c.insert(
            "head.weight",
            Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap(),
        )
        .unwrap();
    };
    let strict = bind_error("strict", &["--strict"], add_extra);
    assert!(
        strict.contains("--strict: 1 checkpoint tensor bind to no initializer: \"head.weight\""),
        "{strict}"
    );
    // Without --strict the extra tensor is a notice and the blob is written; a rule can drop it.
    let dir = scratch_dir("extra");
    let weights = edited(&dir, add_extra);
    let (o, blob) = convert(&dir, &["--weights", &weights]);
    ok_text(&o);
    assert!(
        text(&o).contains("notice: 1 checkpoint tensor bound to no initializer: \"head.weight\""),
        "{}",
        text(&o)
    );
    assert!(blob.exists());
    let (o, _) = convert(
        &dir,
        &[
            "--weights",
            &weights,
            "--strict",
            "--rename",
            "re:^head\\..*$=",
        ],
    );
    ok_text(&o);
}

#[test]
fn verbose_and_inspect_print_what_bound_to_what() {
    let dir = scratch_dir("verbose");
    let weights = ckpt("digits.npz");
    let (o, _) = convert(
        &dir,
        &["--weights", &weights, "--rename", "backbone.=", "--verbose"],
    );
    let t = ok_text(&o);
    assert!(t.contains("bound 8 initializers:"), "{t}");
    assert!(
        t.contains("conv2.bias [16] FLOAT <- backbone.conv2.bias F32 [16, 1, 1] (equal up to size-1 dims) (rename)"),
        "{t}"
    );
    let o = ember_in(
        &dir,
        &[
            "inspect",
            &ckpt("digits_random.onnx"),
            "--weights",
            &ckpt("digits_legacy.pt"),
        ],
    );
    let t = ok_text(&o);
    assert!(
        t.contains("fc1.weight [32, 64] FLOAT <- module.fc1.weight F32 (prefix)"),
        "{t}"
    );
    assert!(t.contains("unused checkpoint tensors: module.step"), "{t}");
    assert!(t.contains("arena"), "{t}");
    // A blob's weights are fixed: binding to it is an error.
    let blob = dir.join("out.ember");
    let o = ember_in(
        &dir,
        &[
            "inspect",
            blob.to_str().unwrap(),
            "--weights",
            &ckpt("digits_zip.pt"),
        ],
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("already fixed"), "{}", text(&o));
}

#[test]
fn lora_merges_before_conversion_and_matches_numpy() {
    for (scale, golden) in [("1", "y_lora.npy"), ("0.5", "y_lora_half.npy")] {
        let dir = scratch_dir(&format!("lora_{golden}"));
        let (o, blob) = convert(
            &dir,
            &[
                "--weights",
                &ckpt("digits_zip.pt"),
                "--lora",
                &ckpt("lora/adapter_model.safetensors"),
                "--lora-scale",
                scale,
            ],
        );
        let t = ok_text(&o);
        assert!(t.contains("LoRA: merged 1 layer: fc1 -> fc1.weight"), "{t}");
        let o = run_expect(&dir, &blob, &ckpt(golden), "1e-5");
        ok_text(&o);
    }
    // The adapter's folder works too, on the MatMul graph without --weights.
    let dir = scratch_dir("lora_matmul");
    let out = dir.join("mm.ember");
    let o = ember_in(
        &dir,
        &[
            "convert",
            &ckpt("digits_matmul.onnx"),
            "--shape",
            "input=360,1,8,8",
            "--lora",
            &ckpt("lora"),
            "-o",
            out.to_str().unwrap(),
            "--verbose",
        ],
    );
    let t = ok_text(&o);
    assert!(t.contains("(B @ A)^T"), "{t}");
    let o = run_expect(&dir, &out, &ckpt("y_lora.npy"), "1e-5");
    ok_text(&o);
}

#[test]
fn binding_works_with_int8_quantization_and_emit_rust() {
    // The int8 model of the random graph bound to the trained weights computes exactly what the
    // int8 model of the original digits graph computes.
    let dir = scratch_dir("int8");
    let calib = model("digits/calib.npy");
    let bound = dir.join("bound.ember");
    let o = ember_in(
        &dir,
        &[
            "convert",
            &ckpt("digits_random.onnx"),
            "--weights",
            &ckpt("digits_zip.pt"),
            "--quantize",
            "int8",
            "--calibrate",
            &calib,
            "-o",
            bound.to_str().unwrap(),
        ],
    );
    ok_text(&o);
    assert!(
        text(&o).contains("float vs int8 on the calibration set"),
        "{}",
        text(&o)
    );
    let original = dir.join("original.ember");
    let o = ember_in(
        &dir,
        &[
            "convert",
            &model("digits/model.onnx"),
            "--quantize",
            "int8",
            "--calibrate",
            &calib,
            "-o",
            original.to_str().unwrap(),
        ],
    );
    ok_text(&o);
    let y = dir.join("y_original.npy");
    ok_text(&on_digit(
        "run",
        &original,
        &["--output", y.to_str().unwrap()],
    ));
    let expect = ["--expect", y.to_str().unwrap(), "--atol", "0"];
    ok_text(&on_digit("run", &bound, &expect));

    // --emit rust writes the module and the blob beside it, with the bound weights.
    let dir = scratch_dir("emit");
    let rs = dir.join("model.rs");
    let weights = ckpt("digits_legacy.pt");
    let o = convert_into(&dir, &rs, &["--weights", &weights, "--emit", "rust"]);
    ok_text(&o);
    assert!(rs.exists());
    let o = run_expect(
        &dir,
        &dir.join("model.ember"),
        &model("digits/y.npy"),
        "1e-4",
    );
    ok_text(&o);
    // --emit object embeds the same bound blob.
    let obj = dir.join("model.o");
    let weights = ckpt("digits_legacy.pt");
    let o = convert_into(&dir, &obj, &["--weights", &weights, "--emit", "object"]);
    ok_text(&o);
    let blob = std::fs::read(dir.join("model.ember")).unwrap();
    let object = std::fs::read(&obj).unwrap();
    assert!(
        object.windows(blob.len()).any(|w| w == blob.as_slice()),
        "the object holds the bound blob"
    );
}
