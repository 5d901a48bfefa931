//! Helpers shared by Ember's integration tests: locating the bundled models and reading their `.npy` data.

use std::path::{Path, PathBuf};

/// The repository's `tests/models/<name>` folder.
pub fn model_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(name)
}

/// Reads a float32 `.npy` file as `(shape, data)`.
pub fn read_npy_f32(path: &Path) -> (Vec<usize>, Vec<f32>) {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).expect("valid .npy");
    let shape = npy.shape().iter().map(|&d| d as usize).collect();
    (shape, npy.into_vec().expect("float32 data"))
}

/// The blob of bundled model `name` (a folder under `tests/models/`, such as `kws/lengths`) converted
/// with shape variants, as `ember convert --dim DIM --shape SHAPE` does (`T=25,49,97`, `input=1,10,T`).
pub fn convert_variants(name: &str, dim: &str, shape: &str) -> Vec<u8> {
    let path = model_dir(name).join("model.onnx");
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut opts = ember_convert::ConvertOptions::default();
    opts.dims.push(
        ember_convert::ConvertOptions::parse_dim(dim)
            .unwrap_or_else(|e| panic!("--dim {dim}: {e}")),
    );
    opts.add_shape(shape)
        .unwrap_or_else(|e| panic!("--shape {shape}: {e}"));
    ember_convert::convert(&bytes, &opts)
        .unwrap_or_else(|e| panic!("cannot convert {} with --dim {dim}: {e}", path.display()))
        .blob
}

/// Converts `tests/models/<name>/model.onnx` with the given input shapes.
pub fn convert_model(name: &str, shapes: &[(&str, &[usize])]) -> Vec<u8> {
    let path = model_dir(name).join("model.onnx");
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let opts = ember_convert::ConvertOptions {
        shapes: shapes
            .iter()
            .map(|(n, d)| (n.to_string(), d.to_vec()))
            .collect(),
        keep_names: true,
        ..Default::default()
    };
    ember_convert::convert(&bytes, &opts)
        .unwrap_or_else(|e| panic!("cannot convert {}: {e}", path.display()))
        .blob
}

pub mod conformance;
pub mod fuzz;
