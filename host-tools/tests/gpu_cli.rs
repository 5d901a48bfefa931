//! `ember run --device ...` with the `gpu` feature (`cargo xtask ci` runs this file with
//! `--features gpu` on lavapipe): per-op GPU times and the memory-pool report with `--profile`, int8
//! outputs equal to the CPU's, and `--device cuda` on a build or machine without CUDA failing with the
//! available devices named, without a panic.
#![cfg(feature = "gpu")]

mod common;

use std::path::{Path, PathBuf};

use common::{ember, models, ok_text, on_input, text, write_npy_f32};

/// Whether a Vulkan device is here (or the test must fail: `EMBER_REQUIRE_GPU=1`).
fn have_vulkan() -> bool {
    if !ember_gpu::vulkan_devices().is_empty() {
        return true;
    }
    assert_ne!(
        std::env::var("EMBER_REQUIRE_GPU").as_deref(),
        Ok("1"),
        "EMBER_REQUIRE_GPU=1 but this machine has no Vulkan device"
    );
    eprintln!("skipping: no Vulkan device (apt-get install mesa-vulkan-drivers libvulkan1)");
    false
}

/// Converts `onnx` at batch 360 (the whole digits test set) into `out`.
fn convert(onnx: &Path, out: &Path) {
    let shape = ["--shape", "input=360,1,8,8"];
    let o = common::convert(onnx.to_str().unwrap(), out, &shape);
    ok_text(&o);
}

/// `tests/models/<onnx>` converted into `<tmp>/<folder>/<file>`, as `(folder, blob)`; `None` (the test
/// skips) without a Vulkan device.
fn vulkan_blob(folder: &str, onnx: &str, file: &str) -> Option<(PathBuf, PathBuf)> {
    if !have_vulkan() {
        return None;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    let blob = dir.join(file);
    convert(&models().join(onnx), &blob);
    Some((dir, blob))
}

#[test]
fn run_on_vulkan_profiles_and_reports_memory() {
    let Some((_, blob)) = vulkan_blob("gpu_cli", "digits/model.onnx", "digits.ember") else {
        return;
    };
    let x = models().join("digits/x.npy");
    let y = models().join("digits/y.npy");
    let expect = [
        "--expect",
        y.to_str().unwrap(),
        "--device",
        "vulkan",
        "--profile",
    ];
    let o = on_input("run", &blob, x.to_str().unwrap(), &expect);
    let out = ok_text(&o);
    assert!(out.contains("profile (last run"), "{out}");
    assert!(out.contains("Conv2d") && out.contains("total"), "{out}");
    assert!(
        out.contains("memory pool:") && out.contains("B reserved"),
        "{out}"
    );
    assert!(out.contains(": ok"), "{out}");
}

#[test]
fn int8_outputs_on_vulkan_equal_the_cpus() {
    let Some((dir, blob)) = vulkan_blob("gpu_cli_int8", "digits_qdq/model.onnx", "qdq.ember")
    else {
        return;
    };
    let x = models().join("digits/x.npy");
    let logits = "logits_QuantizeLinear_Output";
    let mut written = Vec::new();
    for device in ["cpu", "vulkan"] {
        let file = dir.join(format!("logits_{device}.npy"));
        let output = format!("{logits}={}", file.display());
        let o = on_input(
            "run",
            &blob,
            x.to_str().unwrap(),
            &["--output", &output, "--device", device],
        );
        assert!(o.status.success(), "{device}: {}", text(&o));
        written.push(std::fs::read(&file).unwrap());
    }
    assert!(written[0].len() > 3600, "int8 .npy of 3,600 values");
    assert_eq!(written[0], written[1], "the int8 logits files differ");
}

#[test]
fn cuda_without_cuda_fails_naming_the_available_devices() {
    if cfg!(feature = "gpu-cuda") {
        return; // this build has CUDA: whether it runs depends on the machine.
    }
    let blob = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu_cli_cuda.ember");
    let o = ember(&[
        "convert",
        models().join("digits/model.onnx").to_str().unwrap(),
        "-o",
        blob.to_str().unwrap(),
    ]);
    ok_text(&o);
    let x1 = models().join("digits/x1.npy");
    let o = ember(&[
        "run",
        blob.to_str().unwrap(),
        "--input",
        x1.to_str().unwrap(),
        "--device",
        "cuda",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("available devices: cpu"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
}

#[test]
fn a_blob_with_shape_variants_runs_the_variant_its_input_fits_on_vulkan() {
    if !have_vulkan() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu_cli_variants");
    std::fs::create_dir_all(&dir).unwrap();
    let blob = dir.join("kws.ember");
    let onnx = models().join("kws/lengths/model.onnx");
    let shape = ["--dim", "T=25,49,97", "--shape", "input=1,10,T"];
    ok_text(&common::convert(onnx.to_str().unwrap(), &blob, &shape));
    for t in [97, 25, 49] {
        let x = models().join(format!("kws/lengths/x{t}.npy"));
        let y = models().join(format!("kws/lengths/y{t}.npy"));
        let expect = ["--expect", y.to_str().unwrap(), "--device", "vulkan"];
        let out = ok_text(&on_input("run", &blob, x.to_str().unwrap(), &expect));
        assert!(out.contains(": ok"), "T={t}: {out}");
    }
    // 30 frames in a blob that declares the input paddable: the 49-frame variant runs it, padded on
    // the host before the upload, with the CPU's answer.
    let padded = dir.join("kws_padded.ember");
    let pad = [&shape[..], &["--pad", "input=0"]].concat();
    ok_text(&common::convert(onnx.to_str().unwrap(), &padded, &pad));
    let x49 = std::fs::read(models().join("kws/lengths/x49.npy")).unwrap();
    let x49: Vec<f32> = npyz::NpyFile::new(&x49[..]).unwrap().into_vec().unwrap();
    let x30: Vec<f32> = (0..10).flat_map(|c| x49[c * 49..][..30].to_vec()).collect();
    let (x, y) = (dir.join("x30.npy"), dir.join("y30_cpu.npy"));
    write_npy_f32(&x, &[1, 10, 30], &x30);
    let x = x.to_str().unwrap();
    ok_text(&on_input(
        "run",
        &padded,
        x,
        &["--output", y.to_str().unwrap()],
    ));
    let expect = [
        "--expect",
        y.to_str().unwrap(),
        "--atol",
        "1e-5",
        "--device",
        "vulkan",
    ];
    let out = ok_text(&on_input("run", &padded, x, &expect));
    assert!(out.contains("-> [1, 10, 49] with 0: variant T=49"), "{out}");
    assert!(out.contains(": ok"), "{out}");
    // A length the blob was not converted for names the ones it has.
    let x = models().join("kws/x.npy");
    let o = on_input("run", &blob, x.to_str().unwrap(), &["--device", "vulkan"]);
    assert!(!o.status.success());
    let err = text(&o);
    assert!(
        err.contains("no shape variant") && err.contains("T=97"),
        "{err}"
    );
}

#[test]
fn inspect_on_a_device_names_the_ops_the_host_runs() {
    // `where.onnx` selects with bool masks, which the device does not hold: its three Where ops run
    // on the host inside the session, and `inspect --device` says which and why.
    if !have_vulkan() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu_cli_inspect");
    std::fs::create_dir_all(&dir).unwrap();
    let blob = dir.join("where.ember");
    let onnx =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../converter/tests/models/ops/where.onnx");
    ok_text(&common::convert(onnx.to_str().unwrap(), &blob, &[]));
    let out = ok_text(&ember(&[
        "inspect",
        blob.to_str().unwrap(),
        "--device",
        "vulkan",
    ]));
    assert!(
        out.contains("3 of 9 ops run on the host CPU inside the vulkan:0"),
        "{out}"
    );
    assert!(
        out.contains("#0 Where (tensor 1 is bool, which the device does not hold)"),
        "{out}"
    );
    assert!(out.contains("memory pool:"), "{out}");
}
