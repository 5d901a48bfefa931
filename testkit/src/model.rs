//! Whole models in tests: running a blob on `ember-core`'s reference kernels, the `.npy` files the
//! goldens come in, the bundled models' folder, and single-op blobs written with the blob writer.

use std::path::{Path, PathBuf};

use ember_core::format::write::{write_blob, BlobParts};
use ember_core::format::{ArenaPlan, DType, Dims, ModelInfo, OpRecord, Storage, TensorRecord};
use ember_core::{AlignedBuf, Model, OpKind, Session};

/// The repository's `tests/models` folder, which holds the bundled models and their goldens.
pub fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models")
}

/// Reads an `.npy` file as `(shape, data)`; panics naming the file if it is missing or of another
/// element type.
pub fn read_npy<T: npyz::Deserialize>(path: &Path) -> (Vec<usize>, Vec<T>) {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..])
        .unwrap_or_else(|e| panic!("{} is not a valid .npy: {e}", path.display()));
    let shape = npy.shape().iter().map(|&d| d as usize).collect();
    let data = npy
        .into_vec()
        .unwrap_or_else(|e| panic!("{}: unexpected element type: {e}", path.display()));
    (shape, data)
}

/// Runs `blob` on the reference kernels with `x` as its one input; returns every output's values and
/// dims, in graph order.
pub fn run_outputs(blob: &[u8], x: &[f32]) -> Vec<(Vec<f32>, Vec<usize>)> {
    let blob = AlignedBuf::from_bytes(blob);
    let model = Model::parse(blob.as_bytes()).expect("the blob parses");
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).expect("the session opens");
    s.input(0).unwrap().write_f32(x).unwrap();
    s.run().expect("the model runs");
    (0..model.outputs().len())
        .map(|i| {
            let out = s.output(i).unwrap();
            let dims = out.dims().iter().map(|&d| d as usize).collect();
            (out.as_f32().unwrap().to_vec(), dims)
        })
        .collect()
}

/// Runs `blob` on the reference kernels with `x` as its one input; returns output 0 and its dims.
pub fn run_with_dims(blob: &[u8], x: &[f32]) -> (Vec<f32>, Vec<usize>) {
    run_outputs(blob, x).swap_remove(0)
}

/// Runs `blob` on the reference kernels with `x` as its one input; returns output 0.
pub fn run(blob: &[u8], x: &[f32]) -> Vec<f32> {
    run_with_dims(blob, x).0
}

/// The largest `|a[i] - b[i]|`; the slices must be as long as each other.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// One operand of a single-op model: a graph input (its values written at run time, as f32) or a
/// weight tensor, of any dtype (its values held as f32, exact for int8 and int32 ones).
pub struct Operand {
    /// Dimensions.
    pub dims: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// Row-major values.
    pub values: Vec<f32>,
    /// Whether it is a weight (stored in the blob) rather than a graph input.
    pub weight: bool,
}

/// An f32 graph input.
pub fn input(dims: &[usize], values: Vec<f32>) -> Operand {
    assert_eq!(dims.iter().product::<usize>(), values.len());
    Operand {
        dims: dims.to_vec(),
        dtype: DType::F32,
        values,
        weight: false,
    }
}

/// A graph input of `dtype`, its values given as f32.
pub fn typed_input(dims: &[usize], values: Vec<f32>, dtype: DType) -> Operand {
    Operand {
        dtype,
        ..input(dims, values)
    }
}

/// An f32 weight.
pub fn weight(dims: &[usize], values: Vec<f32>) -> Operand {
    Operand {
        weight: true,
        ..input(dims, values)
    }
}

/// An int8 weight.
pub fn weight_i8(dims: &[usize], values: Vec<i8>) -> Operand {
    Operand {
        dtype: DType::I8,
        ..weight(dims, values.into_iter().map(f32::from).collect())
    }
}

/// An int32 weight (a bias).
pub fn weight_i32(dims: &[usize], values: Vec<i32>) -> Operand {
    Operand {
        dtype: DType::I32,
        ..weight(dims, values.into_iter().map(|v| v as f32).collect())
    }
}

/// `n` rounded up to the blob's 16-byte alignment.
fn align(n: usize) -> usize {
    n.div_ceil(16) * 16
}

/// An operand's bytes, little-endian, in its dtype (each value converted as numpy's `astype` does).
fn bytes_of(o: &Operand) -> Vec<u8> {
    let size = o.dtype.size();
    o.values
        .iter()
        .flat_map(|&v| {
            ember_core::ops::element::scalar_bytes(o.dtype, f64::from(v))[..size].to_vec()
        })
        .collect()
}

fn record(dims: &[usize], dtype: DType, storage: Storage) -> TensorRecord {
    TensorRecord {
        dtype,
        dims: Dims::from_slice(&dims.iter().map(|&d| d as u32).collect::<Vec<_>>()).unwrap(),
        storage,
        quant: None,
        first_use: 0,
        last_use: 0,
    }
}

/// A blob with one op of `kind` over `operands` in order (graph inputs in the arena, weights in the
/// weights section), its output of `out_dims` and `out_dtype` after them in the arena (no tensor
/// shares bytes).
pub fn single_op_blob(
    kind: OpKind,
    operands: &[Operand],
    out_dims: &[usize],
    out_dtype: DType,
) -> AlignedBuf {
    let (mut tensors, mut weights, mut arena) = (Vec::new(), Vec::new(), 0usize);
    let mut graph_inputs = heapless::Vec::new();
    for (id, o) in operands.iter().enumerate() {
        let bytes = bytes_of(o);
        let storage = if o.weight {
            let offset = weights.len();
            weights.extend_from_slice(&bytes);
            weights.resize(align(weights.len()), 0);
            Storage::Weights {
                offset: offset as u32,
            }
        } else {
            let offset = arena;
            arena = align(arena + bytes.len());
            graph_inputs.push(id as u32).unwrap();
            Storage::Arena {
                offset: offset as u32,
            }
        };
        tensors.push(record(&o.dims, o.dtype, storage));
    }
    let out = tensors.len() as u32;
    tensors.push(record(
        out_dims,
        out_dtype,
        Storage::Arena {
            offset: arena as u32,
        },
    ));
    arena = align(arena + out_dtype.size() * out_dims.iter().product::<usize>()).max(16);
    let ops = [OpRecord {
        kind,
        inputs: heapless::Vec::from_slice(&(0..operands.len() as u32).collect::<Vec<_>>()).unwrap(),
        output: out,
    }];
    let info = ModelInfo {
        producer: b"ember-testkit",
        source_hash: 0,
        tensor_count: tensors.len() as u32,
        op_count: 1,
        inputs: graph_inputs,
        outputs: heapless::Vec::from_slice(&[out]).unwrap(),
        arena: ArenaPlan {
            persistent_bytes: 0,
            activation_bytes: arena as u32,
            scratch_bytes: 0,
            lower_bound_bytes: arena as u32,
        },
    };
    let bytes = write_blob(&BlobParts {
        info: &info,
        tensors: &tensors,
        ops: &ops,
        weights: &weights,
        names: None,
        variants: None,
    })
    .expect("blob writes");
    AlignedBuf::from_bytes(&bytes)
}
