//! The model builder: the digits CNN written in Rust (`examples/digits_builder.rs`) takes its weights
//! from every checkpoint layout and reproduces the digits goldens; a missing weight, a weight of the
//! wrong shape or type, and unused tensors each give a message naming the layer and the tensor; and
//! weight-only int8 turns its fully connected layers into `FullyConnectedW8`.

#[path = "../../examples/digits_builder.rs"]
mod example;

use std::path::PathBuf;

use ember_convert::bind::{BindOptions, Match, Rename};
use ember_convert::build::{Builder, Conv2d};
use ember_convert::ir::DType;
use ember_convert::weights::{Checkpoint, ElementType, Tensor};
use ember_convert::{convert_built, ConvertError, ConvertOptions, Converted, WeightStorage};
use ember_testkit::model::{max_abs_diff, models_dir, read_npy, run};

fn dir() -> PathBuf {
    models_dir()
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn npy(rel: &str) -> Vec<f32> {
    read_npy(&dir().join(rel)).1
}

/// The digits tolerance (tests/digits.rs): probabilities within 1e-4 of onnxruntime's.
const TOLERANCE: f32 = 1e-4;

fn build_digits(ckpt: &Checkpoint<'_>, storage: WeightStorage) -> Converted {
    let built = example::digits(ckpt, 360).unwrap();
    convert_built(built, &ConvertOptions::default(), storage).unwrap()
}

#[test]
fn the_builder_reproduces_the_digits_goldens_from_every_layout() {
    let x = npy("digits/x.npy");
    let cases = [
        ("checkpoints/digits_zip.pt", Match::Exact, "digits/y.npy"),
        (
            "checkpoints/digits_legacy.pt",
            Match::Prefix,
            "digits/y.npy",
        ),
        (
            "checkpoints/digits_bf16.safetensors",
            Match::Prefix,
            "checkpoints/y_bf16.npy",
        ),
    ];
    for (file, how, golden) in cases {
        let bytes = read(file);
        let ckpt = Checkpoint::parse(&bytes).unwrap();
        let built = example::digits(&ckpt, 360).unwrap();
        assert_eq!(built.report.bound.len(), 8, "{file}");
        assert!(built.report.bound.iter().all(|b| b.how == how), "{file}");
        let converted = convert_built(built, &ConvertOptions::default(), WeightStorage::Float)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let diff = max_abs_diff(&run(&converted.blob, &x), &npy(golden));
        println!("{file}: max |builder - onnxruntime| = {diff:.2e}");
        assert!(diff <= TOLERANCE, "{file}: {diff}");
    }
    // The ONNX path and the builder give the same ops: the same IR went through the same passes.
    let onnx = ember_convert::convert(
        &read("digits/model.onnx"),
        &ConvertOptions {
            shapes: vec![("input".into(), vec![360, 1, 8, 8])],
            ..ConvertOptions::default()
        },
    )
    .unwrap();
    let bytes = read("checkpoints/digits_zip.pt");
    let built = build_digits(&Checkpoint::parse(&bytes).unwrap(), WeightStorage::Float);
    let kinds = |c: &Converted| c.report.ops.iter().map(|(_, k)| *k).collect::<Vec<_>>();
    assert_eq!(kinds(&built), kinds(&onnx));
    assert_eq!(built.report.arena, onnx.report.arena);
}

#[test]
fn names_go_through_the_binding_rules() {
    let bytes = read("checkpoints/digits.npz");
    let ckpt = Checkpoint::parse(&bytes).unwrap();
    // Names under `backbone.`: missing without a rule, found with one.
    let e = example::digits(&ckpt, 1).unwrap_err().to_string();
    assert!(
        e.contains("layer \"conv1\": weight \"conv1.weight\" is not in the checkpoint")
            && e.contains("closest names there: \"backbone.conv1.weight\""),
        "{e}"
    );
    let opts = BindOptions {
        renames: vec![Rename::parse("backbone.=").unwrap()],
        strict: true,
    };
    let mut b = Builder::with_options(&ckpt, &opts);
    let x = b.input("input", &[1, 64], DType::F32);
    let y = b.linear("fc1", x).unwrap();
    b.output("y", y);
    // conv2.bias is saved [16, 1, 1] in this file: read up to size-1 dims when asked for [16].
    let bias = b.param_shaped("conv2", "conv2.bias", &[16]).unwrap();
    assert_eq!(b.shape(bias), [16]);
    // --strict: everything the layers did not read is an error, listed.
    let e = b.finish().unwrap_err().to_string();
    assert!(
        e.contains("--strict: 5 checkpoint tensors read by no layer: backbone.conv1.bias"),
        "{e}"
    );
}

fn ckpt_with(tensors: &[(&str, Tensor<'static>)]) -> Checkpoint<'static> {
    let mut c = Checkpoint::new();
    for (n, t) in tensors {
        c.insert(*n, t.clone()).unwrap();
    }
    c
}

#[test]
fn wrong_weights_name_the_layer_and_the_tensor() {
    let f32s = |shape: Vec<usize>| {
        let n = shape.iter().product();
        Tensor::from_f32(shape, &vec![0.5; n]).unwrap()
    };
    let ckpt = ckpt_with(&[
        ("fc.weight", f32s(vec![4, 3])),
        ("fc.bias", f32s(vec![5])),
        ("conv.weight", f32s(vec![8, 2, 3, 3])),
        (
            "ids.weight",
            Tensor::owned(ElementType::I64, vec![2, 2], vec![0; 32]).unwrap(),
        ),
    ]);
    let err = |f: &dyn Fn(&mut Builder<'_, '_>) -> Result<(), ConvertError>| {
        let mut b = Builder::new(&ckpt);
        f(&mut b).unwrap_err().to_string()
    };
    // The input has 6 features, the weight takes 3.
    let e = err(&|b| {
        let x = b.input("x", &[1, 6], DType::F32);
        b.linear("fc", x).map(drop)
    });
    assert_eq!(
        e,
        "layer \"fc\": weight \"fc.weight\" [4, 3] does not take an input of 6 features (a Linear \
         weight is [out, in])"
    );
    // The bias is [5] where the layer has 4 outputs.
    let e = err(&|b| {
        let x = b.input("x", &[1, 3], DType::F32);
        b.linear("fc", x).map(drop)
    });
    assert_eq!(
        e,
        "layer \"fc\": tensor \"fc.bias\" [5] F32 for weight \"fc.bias\": the layer needs [4]"
    );
    // 3 input channels for a weight taking 2.
    let e = err(&|b| {
        let x = b.input("x", &[1, 3, 5, 5], DType::F32);
        b.conv2d("conv", x, Conv2d::default()).map(drop)
    });
    assert!(
        e.starts_with(
            "layer \"conv\": weight \"conv.weight\" [8, 2, 3, 3] does not take an input of 3 channels"
        ),
        "{e}"
    );
    // An integer tensor where a weight is needed.
    let e = err(&|b| {
        let x = b.input("x", &[1, 3], DType::I64);
        b.embedding("ids", x).map(drop)
    });
    assert_eq!(
        e,
        "layer \"ids\": tensor \"ids.weight\" [2, 2] I64 for weight \"ids.weight\": its element \
         type is not a float type, which weights need"
    );
    // A layer whose weights are absent altogether.
    let e = err(&|b| {
        let x = b.input("x", &[1, 4], DType::F32);
        b.layer_norm("norm", x, 1e-5).map(drop)
    });
    assert!(
        e.starts_with("layer \"norm\": weight \"norm.weight\" [4] is not in the checkpoint"),
        "{e}"
    );
    // Ops without weights name their layer too.
    let e = err(&|b| {
        let x = b.input("x", &[2, 3], DType::F32);
        let y = b.input("y", &[4, 5], DType::F32);
        b.matmul("scores", x, y).map(drop)
    });
    assert!(e.starts_with("layer \"scores\": matmul: "), "{e}");
}

/// Weight-only int8 on the builder's digits: both fully connected layers read int8 weights, the
/// weights shrink, every top-1 agrees with the float model's, and the outputs are the float model's
/// with each fc weight replaced by its dequantized value (`scale[o] * q[o, i]`, from the checkpoint by
/// `quantize_weights`, independently of the pass), up to float rounding.
#[test]
fn int8_weights_on_the_builders_digits() {
    let bytes = read("checkpoints/digits_zip.pt");
    let ckpt = Checkpoint::parse(&bytes).unwrap();
    let float = build_digits(&ckpt, WeightStorage::Float);
    let int8 = build_digits(&ckpt, WeightStorage::Int8);
    let kinds: Vec<&str> = int8.report.ops.iter().map(|(_, k)| *k).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "FullyConnectedW8").count(),
        2,
        "{kinds:?}"
    );
    let summary = int8.report.weight_only.as_ref().unwrap();
    assert_eq!((summary.layers, summary.embeddings), (2, 0));
    assert_eq!(summary.f32_bytes, (32 * 64 + 10 * 32) * 4);
    assert!(int8.report.weights_bytes < float.report.weights_bytes);

    let mut dequantized = Checkpoint::new();
    for (name, t) in ckpt.iter() {
        let t = match name {
            "fc1.weight" | "fc2.weight" => {
                let (rows, width) = (t.shape()[0], t.shape()[1]);
                let (q, scales) =
                    ember_convert::quantize::quantize_weights(&t.to_f32().unwrap(), rows, width);
                let w: Vec<f32> = q
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| scales[i / width] * f32::from(v))
                    .collect();
                Tensor::from_f32(t.shape().to_vec(), &w).unwrap()
            }
            _ => t.clone().into_owned(),
        };
        dequantized.insert(name, t).unwrap();
    }
    let reference = build_digits(&dequantized, WeightStorage::Float);

    let x = npy("digits/x.npy");
    let (a, b, r) = (
        run(&float.blob, &x),
        run(&int8.blob, &x),
        run(&reference.blob, &x),
    );
    let top = |v: &[f32]| -> Vec<usize> {
        v.chunks(10)
            .map(|r| (0..10).max_by(|&i, &j| r[i].total_cmp(&r[j])).unwrap())
            .collect()
    };
    assert_eq!(top(&a), top(&b));
    println!(
        "digits int8-weights: max |int8 - float| = {:.2e}, max |int8 - dequantized float| = {:.2e}",
        max_abs_diff(&a, &b),
        max_abs_diff(&r, &b)
    );
    assert!(max_abs_diff(&r, &b) <= 1e-5);
}
