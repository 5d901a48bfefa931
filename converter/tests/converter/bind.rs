//! Binding checkpoints to a graph whose own weights are random (`digits_random.onnx`): every layout
//! reproduces the digits goldens, every kind of mismatch gives its message naming the tensors, and a
//! LoRA adapter merges to numpy's result, through Gemm and through MatMul.

use crate::common;

use std::path::PathBuf;

use common::{assert_any_contains, assert_contains};
use ember_convert::bind::{bind, BindOptions, Lora, LoraConfig, Match, Rename};
use ember_convert::weights::{Checkpoint, ElementType, Tensor};
use ember_convert::{convert, ConvertOptions};
use ember_testkit::model::{max_abs_diff, models_dir, read_npy, run};

fn dir() -> PathBuf {
    models_dir().join("checkpoints")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn npy(path: PathBuf) -> Vec<f32> {
    read_npy(&path).1
}

/// Runs the ONNX model on all 360 digits test images and returns the probabilities.
fn run_digits(onnx: &[u8]) -> Vec<f32> {
    let opts = ConvertOptions {
        shapes: vec![("input".into(), vec![360, 1, 8, 8])],
        ..ConvertOptions::default()
    };
    let converted = convert(onnx, &opts).unwrap();
    run(&converted.blob, &npy(dir().join("../digits/x.npy")))
}

/// The digits tolerance (tests/digits.rs): probabilities within 1e-4 of onnxruntime's.
const TOLERANCE: f32 = 1e-4;

fn rules(args: &[&str]) -> BindOptions {
    BindOptions {
        renames: args.iter().map(|a| Rename::parse(a).unwrap()).collect(),
        strict: false,
    }
}

#[test]
fn random_graph_alone_is_wrong_so_binding_is_what_fixes_it() {
    let y = npy(dir().join("../digits/y.npy"));
    let diff = max_abs_diff(&run_digits(&read("digits_random.onnx")), &y);
    assert!(diff > 0.1, "the random graph already matches ({diff})");
}

#[test]
fn every_layout_binds_and_reproduces_the_digits_goldens() {
    let y = npy(dir().join("../digits/y.npy"));
    let y_bf16 = npy(dir().join("y_bf16.npy"));
    let cases: [(&str, &[&str], Match, &Vec<f32>); 6] = [
        ("digits_zip.pt", &[], Match::Exact, &y),
        ("digits_legacy.pt", &[], Match::Prefix, &y),
        ("digits_bf16.safetensors", &[], Match::Prefix, &y_bf16),
        ("digits.npz", &["backbone.="], Match::Rename, &y),
        ("digits.npz", &[r"re:^backbone\.(.*)=$1"], Match::Rename, &y),
        ("digits.npz", &["backbone.=model."], Match::Rename, &y),
    ];
    let graph = read("digits_random.onnx");
    for (file, renames, how, want) in cases {
        let bytes = read(file);
        let ckpt = Checkpoint::parse(&bytes).unwrap();
        let bound = bind(&graph, Some(&ckpt), None, &rules(renames))
            .unwrap_or_else(|e| panic!("{file} {renames:?}: {e}"));
        let r = &bound.report;
        assert_eq!(r.bound.len(), 8, "{file}");
        assert!(
            r.bound.iter().all(|b| b.how == how),
            "{file}: {:?}",
            r.bound
        );
        let diff = max_abs_diff(&run_digits(&bound.onnx), want);
        println!("{file} {renames:?}: max |ember - onnxruntime| = {diff:.2e}");
        assert!(diff <= TOLERANCE, "{file}: {diff}");
    }
}

#[test]
fn the_report_says_what_bound_to_what_and_what_was_left() {
    let graph = read("digits_random.onnx");
    let legacy = read("digits_legacy.pt");
    let ckpt = Checkpoint::parse(&legacy).unwrap();
    let bound = bind(&graph, Some(&ckpt), None, &BindOptions::default()).unwrap();
    let r = &bound.report;
    assert_eq!(r.unused, vec!["module.step"]);
    assert!(r.notices[0].contains("\"module.step\""), "{:?}", r.notices);
    let fc1 = r
        .bound
        .iter()
        .find(|b| b.initializer == "fc1.weight")
        .unwrap();
    assert_eq!(
        (fc1.tensor.as_str(), fc1.dtype, fc1.onnx_type),
        ("module.fc1.weight", ElementType::F32, "FLOAT")
    );
    let lines = r.lines().join("\n");
    assert!(
        lines.contains("fc1.weight [32, 64] FLOAT <- module.fc1.weight F32 (prefix)"),
        "{lines}"
    );
    assert!(
        lines.contains("unused checkpoint tensors: module.step"),
        "{lines}"
    );

    // --strict makes the unused tensor an error; a rule dropping it makes it pass again.
    let strict = BindOptions {
        strict: true,
        ..BindOptions::default()
    };
    let e = bind(&graph, Some(&ckpt), None, &strict)
        .unwrap_err()
        .to_string();
    assert_contains(
        &e,
        "--strict: 1 checkpoint tensor bind to no initializer: \"module.step\"",
    );
    let dropped = BindOptions {
        strict: true,
        ..rules(&[r"re:^module\.step$="])
    };
    let ok = bind(&graph, Some(&ckpt), None, &dropped).unwrap();
    assert_eq!(ok.report.dropped, vec!["module.step"]);

    // Size-1 dims: the npz saves conv2.bias as [16, 1, 1].
    let npz = read("digits.npz");
    let ckpt = Checkpoint::parse(&npz).unwrap();
    let r = bind(&graph, Some(&ckpt), None, &rules(&["backbone.="]))
        .unwrap()
        .report;
    assert_any_contains(&r.notices, "\"backbone.conv2.bias\" [16, 1, 1] -> [16]");
    assert!(r.lines().join("\n").contains("(equal up to size-1 dims)"));
}

/// The digits weights as an in-memory checkpoint, f32, PyTorch names.
fn digits_ckpt() -> Checkpoint<'static> {
    let bytes = read("digits_zip.pt");
    Checkpoint::parse(&bytes).unwrap().into_owned()
}

/// Replaces the tensor `name` of `ckpt` by `t`.
fn replace(ckpt: &mut Checkpoint<'static>, name: &str, t: Tensor<'static>) {
    ckpt.remove(name).unwrap();
    ckpt.insert(name, t).unwrap();
}

fn error_of(ckpt: &Checkpoint<'_>, opts: &BindOptions) -> String {
    bind(&read("digits_random.onnx"), Some(ckpt), None, opts)
        .unwrap_err()
        .to_string()
}

#[test]
fn missing_tensors_are_listed_with_the_closest_names() {
    let mut ckpt = digits_ckpt();
    let w = ckpt.remove("conv1.weight").unwrap();
    ckpt.remove("fc2.bias").unwrap();
    ckpt.insert("conv1.weights", w).unwrap();
    let e = error_of(&ckpt, &BindOptions::default());
    assert!(
        e.starts_with("binding weights: 2 problems (no file written):"),
        "{e}"
    );
    assert_contains(
        &e,
        "initializer \"conv1.weight\" [8, 1, 3, 3] FLOAT has no tensor in the checkpoint \
             (closest names there: \"conv1.weights\"",
    );
    assert_contains(&e, "initializer \"fc2.bias\" [10] FLOAT has no tensor");
    // Without the rename, every npz name is one prefix away.
    let npz = read("digits.npz");
    let e = error_of(&Checkpoint::parse(&npz).unwrap(), &BindOptions::default());
    assert_contains(&e, "8 problems");
    assert_contains(&e, "(closest names there: \"backbone.fc1.weight\"");
}

#[test]
fn extra_tensors_are_a_notice_or_with_strict_an_error() {
    let mut ckpt = digits_ckpt();
    ckpt.insert(
        "bn.num_batches_tracked",
        Tensor::owned(ElementType::I64, vec![], vec![0; 8]).unwrap(),
    )
    .unwrap();
    ckpt.insert(
        "fc3.weight",
        Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap(),
    )
    .unwrap();
    let ok = bind(
        &read("digits_random.onnx"),
        Some(&ckpt),
        None,
        &BindOptions::default(),
    )
    .unwrap();
    assert_eq!(
        ok.report.notices[0],
        "2 checkpoint tensors bound to no initializer: \"bn.num_batches_tracked\", \"fc3.weight\""
    );
    let strict = BindOptions {
        strict: true,
        ..BindOptions::default()
    };
    let e = error_of(&ckpt, &strict);
    assert_contains(&e, "--strict: 2 checkpoint tensors bind to no initializer: \"bn.num_batches_tracked\", \"fc3.weight\"");
}

#[test]
fn misshaped_tensors_name_both_shapes() {
    let mut ckpt = digits_ckpt();
    replace(
        &mut ckpt,
        "fc1.weight",
        Tensor::from_f32(vec![32, 63], &[0.0; 32 * 63]).unwrap(),
    );
    let fc2 = ckpt.remove("fc2.weight").unwrap();
    let transposed = fc2.reshaped(vec![32, 10]).unwrap();
    ckpt.insert("fc2.weight", transposed).unwrap();
    let e = error_of(&ckpt, &BindOptions::default());
    assert_contains(&e, "2 problems");
    assert_contains(
        &e,
        "tensor \"fc1.weight\" [32, 63] F32 for initializer \"fc1.weight\" [32, 64] FLOAT: \
             2016 elements where 2048 are needed",
    );
    assert_contains(
        &e,
        "tensor \"fc2.weight\" [32, 10] F32 for initializer \"fc2.weight\" [10, 32] FLOAT: \
             the same element count in another shape (transposed",
    );
}

#[test]
fn unconvertible_tensors_say_why() {
    let mut ckpt = digits_ckpt();
    replace(
        &mut ckpt,
        "fc1.bias",
        Tensor::owned(ElementType::I32, vec![32], vec![0; 128]).unwrap(),
    );
    replace(
        &mut ckpt,
        "fc2.bias",
        Tensor::owned(ElementType::C64, vec![10], vec![0; 80]).unwrap(),
    );
    let e = error_of(&ckpt, &BindOptions::default());
    assert_contains(
        &e,
        "tensor \"fc1.bias\" [32] I32 for initializer \"fc1.bias\" [32] FLOAT: its element \
             type I32 cannot be converted to the initializer's FLOAT: integers do not bind to \
             float weights",
    );
    assert_contains(&e, "tensor \"fc2.bias\" [10] C64 for initializer \"fc2.bias\" [10] FLOAT: its element type C64 cannot be converted");
}

fn adapter(scale: f64) -> Lora<'static> {
    let bytes = read("lora/adapter_model.safetensors");
    let tensors = Checkpoint::parse(&bytes).unwrap().into_owned();
    let config =
        LoraConfig::from_json(&String::from_utf8(read("lora/adapter_config.json")).unwrap())
            .unwrap();
    Lora::new(&tensors, &config, scale).unwrap()
}

/// LoRA merged outputs against numpy's base + LoRA (`make.py`, float64, cast to f32).
const LORA_TOLERANCE: f32 = 1e-5;

#[test]
fn lora_merges_into_the_bound_gemm_weight_and_into_a_matmul_weight() {
    let bytes = read("digits_zip.pt");
    let ckpt = Checkpoint::parse(&bytes).unwrap();
    for (scale, golden) in [(1.0, "y_lora.npy"), (0.5, "y_lora_half.npy")] {
        let want = npy(dir().join(golden));
        let lora = adapter(scale);
        let bound = bind(
            &read("digits_random.onnx"),
            Some(&ckpt),
            Some(&lora),
            &BindOptions::default(),
        )
        .unwrap();
        let m = &bound.report.lora;
        assert_eq!(m.len(), 1);
        assert_eq!(
            (
                m[0].initializer.as_str(),
                m[0].rank,
                m[0].factor,
                m[0].transposed
            ),
            ("fc1.weight", 4, scale * 8.0 / 4.0, false)
        );
        assert_eq!(m[0].consumer, "fc1 (Gemm)");
        let diff = max_abs_diff(&run_digits(&bound.onnx), &want);
        println!("LoRA scale {scale} through Gemm(transB=1): max diff from numpy {diff:.2e}");
        assert!(diff <= LORA_TOLERANCE, "{diff}");
        // The same adapter on the graph whose fc1 is a MatMul with a [64, 32] weight: B @ A
        // transposed.
        let mm = bind(
            &read("digits_matmul.onnx"),
            None,
            Some(&lora),
            &BindOptions::default(),
        )
        .unwrap();
        let m = &mm.report.lora[0];
        assert!(m.transposed, "{m:?}");
        assert_eq!(m.consumer, "fc1 (MatMul)");
        let diff = max_abs_diff(&run_digits(&mm.onnx), &want);
        println!("LoRA scale {scale} through MatMul: max diff from numpy {diff:.2e}");
        assert!(diff <= LORA_TOLERANCE, "{diff}");
    }
}

#[test]
fn lora_for_a_layer_the_model_lacks_is_an_error() {
    let config =
        LoraConfig::from_json(r#"{"r": 2, "lora_alpha": 2, "target_modules": ["head"]}"#).unwrap();
    let mut t = Checkpoint::new();
    t.insert(
        "base_model.model.head.lora_A.weight",
        Tensor::from_f32(vec![2, 32], &[0.1; 64]).unwrap(),
    )
    .unwrap();
    t.insert(
        "base_model.model.head.lora_B.weight",
        Tensor::from_f32(vec![10, 2], &[0.1; 20]).unwrap(),
    )
    .unwrap();
    let lora = Lora::new(&t, &config, 1.0).unwrap();
    let e = bind(
        &read("digits_matmul.onnx"),
        None,
        Some(&lora),
        &BindOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert_contains(
        &e,
        "the adapter adapts module \"head\", but the model has no initializer \"head.weight\"",
    );
    // target_modules must name every adapted module; ranks must agree with the config.
    let other =
        LoraConfig::from_json(r#"{"r": 2, "lora_alpha": 2, "target_modules": ["fc2"]}"#).unwrap();
    let e = Lora::new(&t, &other, 1.0).unwrap_err().to_string();
    assert_contains(&e, "target_modules does not name it");
    let rank4 =
        LoraConfig::from_json(r#"{"r": 4, "lora_alpha": 2, "target_modules": "h.*"}"#).unwrap();
    let e = Lora::new(&t, &rank4, 1.0).unwrap_err().to_string();
    assert_contains(&e, "do not have rank 4");
    let dora = LoraConfig::from_json(r#"{"r": 2, "lora_alpha": 2, "use_dora": true}"#).unwrap_err();
    assert!(dora.to_string().contains("use_dora"));
}
