//! A bidirectional LSTM and a reverse GRU (`converter/tests/models/ops/rnn.onnx`, onnxruntime's goldens
//! from `rnn_cases.py` there) through `ember convert`, `ember inspect` and `ember run` on ember-cpu.

mod common;

use common::{convert, ember, ok_text, on_input, scratch_dir, text};

/// `converter/tests/models/ops/<file>`.
fn case(file: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join("converter/tests/models/ops").join(file);
    path.to_str()
        .expect("the repository path is UTF-8")
        .to_string()
}

#[test]
fn lstm_and_gru_run_on_the_cpu_and_inspect_shows_them() {
    let blob = scratch_dir("rnn").join("rnn.ember");
    ok_text(&convert(&case("rnn.onnx"), &blob, &[]));
    let out = ember(&["inspect", blob.to_str().unwrap()]);
    let t = ok_text(&out);
    assert_eq!(t.matches("Rnn").count(), 2, "{t}");
    let y = case("rnn.y.npy");
    let expect = ["--expect", y.as_str(), "--atol", "1e-5"];
    let out = on_input("run", &blob, &case("rnn.x.npy"), &expect);
    let t = ok_text(&out);
    assert!(text(&out).contains("ok"), "{t}");
}

/// The same on Vulkan (`--features gpu`; skips without a Vulkan device unless `EMBER_REQUIRE_GPU=1`).
#[cfg(feature = "gpu")]
#[test]
fn lstm_and_gru_run_on_vulkan() {
    if ember_gpu::vulkan_devices().is_empty() {
        assert_ne!(
            std::env::var("EMBER_REQUIRE_GPU").as_deref(),
            Ok("1"),
            "EMBER_REQUIRE_GPU=1 but this machine has no Vulkan device"
        );
        eprintln!("skipping: no Vulkan device");
        return;
    }
    let blob = scratch_dir("rnn_gpu").join("rnn.ember");
    ok_text(&convert(&case("rnn.onnx"), &blob, &[]));
    let y = case("rnn.y.npy");
    let expect = [
        "--expect",
        y.as_str(),
        "--atol",
        "1e-5",
        "--device",
        "vulkan",
    ];
    let out = on_input("run", &blob, &case("rnn.x.npy"), &expect);
    let t = ok_text(&out);
    assert!(t.contains(": ok"), "{t}");
}
