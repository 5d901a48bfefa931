//! Cross-target parity: the int8 digits CNN (`tests/models/digits_qdq`, converted here) run through
//! `ember-cortex-m`'s table (its DSP Conv2d and FullyConnected kernels, on the host's emulation of the
//! instructions) gives exactly the bytes of `ember-core`'s reference table on every test image: the same
//! check as `targets/cortex-m/tests/`, but through `Session::with_kernels` and a real model's shapes.

use std::path::PathBuf;

use ember_convert::{convert, ConvertOptions};
use ember_core::{AlignedBuf, Kernels, Model, Session, REFERENCE};

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// Every output of every image, as raw bytes, through `kernels`.
fn run_all(model: &Model<'_>, images: &[f32], kernels: &'static Kernels) -> Vec<Vec<u8>> {
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::with_kernels(model, arena.as_mut_bytes(), kernels).expect("session opens");
    let outputs = model.outputs().len();
    images
        .chunks_exact(64)
        .map(|image| {
            s.input(0).unwrap().write_f32(image).unwrap();
            s.run().expect("the model runs");
            (0..outputs)
                .flat_map(|o| s.output(o).unwrap().bytes().to_vec())
                .collect()
        })
        .collect()
}

#[test]
fn int8_digits_give_the_same_bytes_on_the_cortex_m_table() {
    let onnx = std::fs::read(models().join("digits_qdq/model.onnx")).expect("model is in the repo");
    let converted = convert(&onnx, &ConvertOptions::default()).expect("the QDQ model converts");
    let blob = AlignedBuf::from_bytes(&converted.blob);
    let model = Model::parse(blob.as_bytes()).expect("the blob parses");
    let x = std::fs::read(models().join("digits/x.npy")).expect("images are in the repo");
    let images: Vec<f32> = npyz::NpyFile::new(&x[..]).unwrap().into_vec().unwrap();

    let reference = run_all(&model, &images, &REFERENCE);
    let cortex_m = run_all(&model, &images, &ember_cortex_m::KERNELS);
    assert_eq!(reference.len(), images.len() / 64);
    let differing: Vec<usize> = (0..reference.len())
        .filter(|&i| reference[i] != cortex_m[i])
        .collect();
    assert!(
        differing.is_empty(),
        "{} of {} images give other bytes on `{}`: {:?}",
        differing.len(),
        reference.len(),
        ember_cortex_m::KERNELS.name,
        &differing[..differing.len().min(10)]
    );
}
