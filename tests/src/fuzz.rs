//! The fuzz targets' bodies: one function per target, taking the fuzzer's bytes. `fuzz/` (cargo-fuzz,
//! libFuzzer, nightly) calls them under coverage guidance; `tests/tests/fuzz_corpus.rs` replays every
//! committed corpus file through them on stable, so that what a fuzzer found once is checked forever.
//!
//! Each body checks properties, not only "no panic":
//!
//! - a blob that [`Model::parse`] accepts opens a session and runs, on the reference kernels and on
//!   `ember-cpu`, to `Ok` or an `Err`, never a panic (an index outside the arena or the blob would be
//!   one: the kernels are safe code over slices);
//! - a model's records written back by the blob writer parse to the same records
//!   (`parse(write(x)) == x`);
//! - a conversion either fails with an error or gives a blob that `parse` accepts, which then runs;
//! - readers of `.npy` files and checkpoints return a value or an error.
//!
//! Memory is bounded by the caller: libFuzzer's `-malloc_limit_mb`/`-rss_limit_mb` in `cargo xtask
//! fuzz`, and a counting allocator in the corpus replay ([`MAX_ALLOCATION`]).

use std::sync::OnceLock;

use arbitrary::Unstructured;
use ember_convert::onnx::proto::{attribute_type, ModelProto};
use ember_core::format::write::{write_blob, BlobParts};
use ember_core::format::{ModelInfo, OpRecord, Storage, TensorRecord};
use ember_core::kernels::entry;
use ember_core::{AlignedBuf, DType, Model, OpKind, Session, REFERENCE};
use prost::Message;

/// Largest arena a fuzzed model may ask for to be run: bigger ones are converted and parsed but not
/// run (a session refuses a smaller arena with `ArenaTooSmall`, which `session_refuses_a_small_arena`-
/// style tests check elsewhere). It bounds the work of a run, not only its memory: the arena holds
/// the activations, and the weights of fuzzed models are small (the input's bytes, or the bundled
/// seeds'), so an op's work is at most its activations times a small weight count. At 16 MiB, the
/// int8 digits model with a batch of 20,546 images (10.5 MB of arena) took 53 s under
/// AddressSanitizer: two runs on each of two kernel tables, a libFuzzer timeout for a model that
/// is merely large (`fuzz/corpus/onnx_fields/regression-large-batch`).
pub const MAX_ARENA: usize = 1 << 20;

/// The most a body may allocate at once for an input of `len` bytes, which the corpus replay checks
/// and `cargo xtask fuzz` gives libFuzzer (`-malloc_limit_mb`): 256 MiB plus 64 times the input.
pub fn max_allocation(len: usize) -> usize {
    (256 << 20) + 64 * len
}

/// A target's body: the fuzzer's bytes in, a panic when a property fails.
pub type Body = fn(&[u8]);

/// The targets: name and body.
pub const TARGETS: &[(&str, Body)] = &[
    ("blob", blob),
    ("blob_fields", blob_fields),
    ("blob_firmware", blob_firmware),
    ("onnx", onnx),
    ("onnx_fields", onnx_fields),
    ("tflite", tflite),
    ("npy", npy),
    ("checkpoint", checkpoint),
];

/// Runs `model` on patterned inputs, on the reference kernels and on ember-cpu at this CPU's level.
fn run_everywhere(model: &Model<'_>) {
    if model.arena_bytes() > MAX_ARENA {
        return;
    }
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    if let Ok(mut s) = Session::new(model, arena.as_mut_bytes()) {
        run_session(&mut s, model.inputs().len(), model.outputs().len());
    }
    let Ok(isa) = ember_cpu::Isa::detect() else {
        return;
    };
    let Ok(cpu) = ember_cpu::Cpu::with_isa(isa, 1) else {
        return;
    };
    match cpu.arena_bytes(model) {
        Ok(n) if n <= MAX_ARENA => {
            let mut arena = AlignedBuf::zeroed(n);
            if let Ok(mut s) = cpu.session(model, arena.as_mut_bytes()) {
                run_session(&mut s, model.inputs().len(), model.outputs().len());
            }
        }
        _ => {}
    }
}

/// Writes a byte pattern into every input (any bit pattern: NaNs and infinities too), runs twice (a
/// second run reads what the first left in the arena), and reads every output; in every shape variant
/// the model has, the largest last.
fn run_session<const E: u64>(s: &mut Session<'_, E>, inputs: usize, outputs: usize) {
    let largest = s.variant();
    let count = s.model().variant_count();
    for v in (0..count).filter(|&v| v != largest).chain([largest]) {
        if s.set_variant(v).is_ok() {
            run_variant(s, inputs, outputs);
        }
    }
}

/// [`run_session`] in the session's current variant.
fn run_variant<const E: u64>(s: &mut Session<'_, E>, inputs: usize, outputs: usize) {
    for round in 0..2u8 {
        for i in 0..inputs {
            if let Ok(mut t) = s.input(i) {
                for (k, b) in t.bytes_mut().iter_mut().enumerate() {
                    *b = (k as u8).wrapping_mul(31).wrapping_add(7 + round);
                }
            }
        }
        if s.run().is_err() {
            continue;
        }
        for i in 0..outputs {
            if let Ok(t) = s.output(i) {
                std::hint::black_box(t.bytes().iter().fold(0u8, |a, &b| a ^ b));
            }
        }
    }
}

/// A parsed model's records, owned, for the writer.
struct Parts {
    info: ModelInfo<'static>,
    producer: Vec<u8>,
    tensors: Vec<TensorRecord>,
    ops: Vec<OpRecord>,
    weights: Vec<u8>,
    names: Option<Vec<String>>,
}

impl Parts {
    fn of(model: &Model<'_>) -> Parts {
        let tensors: Vec<TensorRecord> = (0..model.tensor_count())
            .filter_map(|i| model.tensor(i))
            .collect();
        let ops: Vec<OpRecord> = (0..model.op_count()).filter_map(|i| model.op(i)).collect();
        let names: Option<Vec<String>> = (0..tensors.len())
            .map(|i| model.tensor_name(i))
            .chain((0..ops.len()).map(|i| model.op_name(i)))
            .map(|n| n.map(str::to_string))
            .collect();
        let i = model.info();
        Parts {
            info: ModelInfo {
                producer: &[],
                source_hash: i.source_hash,
                tensor_count: i.tensor_count,
                op_count: i.op_count,
                inputs: i.inputs.clone(),
                outputs: i.outputs.clone(),
                arena: i.arena,
            },
            producer: i.producer.to_vec(),
            tensors,
            ops,
            weights: model.weights().to_vec(),
            names,
        }
    }

    /// The blob the writer makes of these records, if it takes them.
    fn write(&self) -> Option<Vec<u8>> {
        let info = ModelInfo {
            producer: &self.producer,
            tensor_count: self.tensors.len() as u32,
            op_count: self.ops.len() as u32,
            ..self.info.clone()
        };
        let names: Option<Vec<&str>> = self
            .names
            .as_ref()
            .filter(|n| n.len() == self.tensors.len() + self.ops.len())
            .map(|n| n.iter().map(String::as_str).collect());
        write_blob(&BlobParts {
            info: &info,
            tensors: &self.tensors,
            ops: &self.ops,
            weights: &self.weights,
            names: names.as_deref(),
            variants: None,
        })
        .ok()
    }
}

/// `parse(write(records of m)) == records of m`.
fn check_round_trip(model: &Model<'_>) {
    let parts = Parts::of(model);
    let Some(blob) = parts.write() else {
        return;
    };
    let aligned = AlignedBuf::from_bytes(&blob);
    let again = Model::parse(aligned.as_bytes()).unwrap_or_else(|e| {
        panic!("a blob the writer made from parsed records does not parse: {e}")
    });
    let back = Parts::of(&again);
    // Compared as printed, so that a NaN (a scale, a clip bound) equals itself.
    let same =
        |a: &dyn core::fmt::Debug, b: &dyn core::fmt::Debug| format!("{a:?}") == format!("{b:?}");
    for (i, (a, b)) in parts.tensors.iter().zip(&back.tensors).enumerate() {
        assert!(same(a, b), "tensor record {i} changed: {a:?} became {b:?}");
    }
    assert_eq!(
        back.tensors.len(),
        parts.tensors.len(),
        "tensor records lost or added"
    );
    for (i, (a, b)) in parts.ops.iter().zip(&back.ops).enumerate() {
        assert!(same(a, b), "op record {i} changed: {a:?} became {b:?}");
    }
    assert_eq!(back.ops.len(), parts.ops.len(), "op records lost or added");
    assert!(back.weights == parts.weights, "weights changed");
    assert!(back.names == parts.names, "names changed");
    assert!(back.info.inputs == parts.info.inputs && back.info.outputs == parts.info.outputs);
}

/// Raw bytes as a blob: parse, write back, run.
pub fn blob(data: &[u8]) {
    let aligned = AlignedBuf::from_bytes(data);
    let Ok(model) = Model::parse(aligned.as_bytes()) else {
        return;
    };
    check_round_trip(&model);
    run_everywhere(&model);
}

/// The kernel entries of the digits firmware (f32): what `ember convert --emit rust` would give it.
const FIRMWARE: u64 = entry::CONV2D
    | entry::MAX_POOL
    | entry::FULLY_CONNECTED
    | entry::SOFTMAX
    | entry::RESHAPE
    | entry::QUANT_CONV2D
    | entry::QUANT_MAX_POOL
    | entry::QUANT_FULLY_CONNECTED
    | entry::QUANTIZE
    | entry::DEQUANTIZE;

/// Raw bytes as a firmware reads them: `Model::parse_only` with a firmware's entry mask, and a session
/// on the reference table cut down to those entries (`Kernels::only`).
pub fn blob_firmware(data: &[u8]) {
    static KERNELS: ember_core::Kernels = REFERENCE.only(FIRMWARE);
    let aligned = AlignedBuf::from_bytes(data);
    let Ok(model) = Model::parse_only::<FIRMWARE>(aligned.as_bytes()) else {
        return;
    };
    if model.arena_bytes() > MAX_ARENA {
        return;
    }
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    if let Ok(mut s) = Session::with_kernels(&model, arena.as_mut_bytes(), &KERNELS) {
        run_session(&mut s, model.inputs().len(), model.outputs().len());
    }
}

/// The bundled models converted (f32, and the digits CNN in int8 too): the seeds that
/// [`blob_fields`] mutates.
fn seed_blobs() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut seeds: Vec<Vec<u8>> = ["digits", "dscnn", "kws", "digits_qdq"]
            .iter()
            .map(|name| crate::convert_model(name, &[]))
            .collect();
        let conv = ember_convert::ConvertOptions::default();
        let onnx = std::fs::read(crate::model_dir("no_inputs").join("model.onnx"));
        if let Ok(c) = onnx.map(|b| ember_convert::convert(&b, &conv)) {
            seeds.extend(c.ok().map(|c| c.blob));
        }
        seeds
    })
}

/// A value a fuzzer is likely to find interesting for a size, an index or an offset.
fn interesting_u32(u: &mut Unstructured<'_>, near: u32) -> u32 {
    match u.int_in_range(0..=7u8).unwrap_or(0) {
        0 => 0,
        1 => 1,
        2 => near.wrapping_add(1),
        3 => near.wrapping_sub(1),
        4 => u32::MAX,
        5 => 1 << u.int_in_range(0..=31u32).unwrap_or(31),
        6 => near.wrapping_mul(2),
        _ => u.arbitrary().unwrap_or(near),
    }
}

/// A parsed seed's records mutated field by field through the blob's schema (dims, dtypes, storage,
/// quantization, lifetimes, op operands and parameters, graph inputs and outputs, the plan, the
/// weights), written by the blob writer (so the checksum and tables are right and the mutation
/// reaches the validator and the kernels), then parsed and run.
pub fn blob_fields(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let seeds = seed_blobs();
    let Ok(k) = u.choose_index(seeds.len()) else {
        return;
    };
    let aligned = AlignedBuf::from_bytes(&seeds[k]);
    let Ok(seed) = Model::parse(aligned.as_bytes()) else {
        return;
    };
    let mut p = Parts::of(&seed);
    let rounds = u.int_in_range(1..=6u8).unwrap_or(1);
    for _ in 0..rounds {
        if p.tensors.is_empty() || p.ops.is_empty() {
            break;
        }
        let t = u.choose_index(p.tensors.len()).unwrap_or(0);
        let o = u.choose_index(p.ops.len()).unwrap_or(0);
        match u.int_in_range(0..=12u8).unwrap_or(0) {
            0 => {
                let dims = &mut p.tensors[t].dims;
                if let Ok(j) = u.choose_index(dims.len()) {
                    dims[j] = interesting_u32(&mut u, dims[j]);
                }
            }
            1 => {
                let dims = &mut p.tensors[t].dims;
                if u.arbitrary().unwrap_or(false) {
                    dims.pop();
                } else {
                    let _ = dims.push(interesting_u32(&mut u, 1));
                }
            }
            2 => {
                let b: u8 = u.arbitrary().unwrap_or(0);
                if let Ok(d) = postcard::from_bytes::<DType>(&[b % 16]) {
                    p.tensors[t].dtype = d;
                }
            }
            3 => {
                let s = &mut p.tensors[t].storage;
                *s = match (*s, u.int_in_range(0..=2u8).unwrap_or(0)) {
                    (Storage::Weights { offset }, 0) => Storage::Weights {
                        offset: interesting_u32(&mut u, offset),
                    },
                    (Storage::Arena { offset }, 0) => Storage::Arena {
                        offset: interesting_u32(&mut u, offset),
                    },
                    (Storage::Weights { offset }, _) => Storage::Arena { offset },
                    (Storage::Arena { offset }, _) => Storage::Weights { offset },
                };
            }
            4 => {
                p.tensors[t].quant = if u.arbitrary().unwrap_or(false) {
                    None
                } else {
                    Some(ember_core::format::QuantParams {
                        scale: u.arbitrary().unwrap_or(0.0),
                        zero_point: u.arbitrary().unwrap_or(0),
                    })
                };
            }
            5 => {
                let r = &mut p.tensors[t];
                r.first_use = interesting_u32(&mut u, r.first_use);
                r.last_use = interesting_u32(&mut u, r.last_use);
            }
            6 => {
                let ins = &mut p.ops[o].inputs;
                if let Ok(j) = u.choose_index(ins.len()) {
                    ins[j] = interesting_u32(&mut u, ins[j]);
                }
            }
            7 => {
                let op = &mut p.ops[o];
                op.output = interesting_u32(&mut u, op.output);
            }
            8 => {
                // A parameter byte changed through the encoding of the kind.
                if let Ok(mut bytes) = postcard::to_allocvec(&p.ops[o].kind) {
                    if let Ok(j) = u.choose_index(bytes.len()) {
                        bytes[j] = u.arbitrary().unwrap_or(0);
                    }
                    if let Ok(kind) = postcard::from_bytes::<OpKind>(&bytes) {
                        p.ops[o].kind = kind;
                    }
                }
            }
            9 => {
                // Another op's kind and parameters on this op's operands.
                let other = u.choose_index(p.ops.len()).unwrap_or(0);
                p.ops[o].kind = p.ops[other].kind;
            }
            10 => {
                let info = &mut p.info;
                match u.int_in_range(0..=3u8).unwrap_or(0) {
                    0 => {
                        if let Ok(j) = u.choose_index(info.inputs.len()) {
                            info.inputs[j] = interesting_u32(&mut u, info.inputs[j]);
                        }
                    }
                    1 => {
                        if let Ok(j) = u.choose_index(info.outputs.len()) {
                            info.outputs[j] = interesting_u32(&mut u, info.outputs[j]);
                        }
                    }
                    2 => {
                        let a = &mut info.arena;
                        a.activation_bytes = interesting_u32(&mut u, a.activation_bytes);
                    }
                    _ => {
                        let a = &mut info.arena;
                        a.scratch_bytes = interesting_u32(&mut u, a.scratch_bytes);
                    }
                }
            }
            11 => {
                if let Ok(j) = u.choose_index(p.weights.len()) {
                    p.weights[j] = u.arbitrary().unwrap_or(0);
                }
            }
            _ => {
                // An op removed or repeated.
                if u.arbitrary().unwrap_or(false) {
                    p.ops.remove(o);
                } else {
                    let dup = p.ops[o].clone();
                    p.ops.insert(o, dup);
                }
                p.names = None;
            }
        }
    }
    if let Some(bytes) = p.write() {
        blob(&bytes);
    }
}

/// Converts ONNX bytes; a blob it gives must parse, and then runs.
fn convert_and_run(onnx: &[u8]) {
    let opts = ember_convert::ConvertOptions::default();
    let Ok(converted) = ember_convert::convert(onnx, &opts) else {
        return;
    };
    let aligned = AlignedBuf::from_bytes(&converted.blob);
    let model = Model::parse(aligned.as_bytes())
        .unwrap_or_else(|e| panic!("the converter wrote a blob that does not parse: {e}"));
    run_everywhere(&model);
}

/// Raw bytes as an ONNX model.
pub fn onnx(data: &[u8]) {
    convert_and_run(data);
}

/// A `.tflite` file, converted and run (the flatbuffer reader of `ember_convert::tflite` and its
/// lowering): every input reaches the TFLite reader, its file identifier written in where the
/// fuzzer's bytes have another.
pub fn tflite(data: &[u8]) {
    let mut bytes = data.to_vec();
    if let Some(id) = bytes.get_mut(4..8) {
        id.copy_from_slice(b"TFL3");
    }
    convert_and_run(&bytes);
}

/// The ONNX seeds [`onnx_fields`] mutates: the bundled models and `fuzz/seeds/onnx/*.onnx`.
fn seed_models() -> &'static [ModelProto] {
    static SEEDS: OnceLock<Vec<ModelProto>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut files = Vec::new();
        for name in ["digits", "dscnn", "kws", "digits_qdq", "no_inputs"] {
            files.push(crate::model_dir(name).join("model.onnx"));
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/onnx");
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut more: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            more.sort();
            files.extend(more);
        }
        files
            .iter()
            .filter_map(|f| std::fs::read(f).ok())
            .filter_map(|b| ModelProto::decode(&b[..]).ok())
            .collect()
    })
}

/// A seed ONNX model mutated through the protobuf types (op types, attributes, operand names,
/// initializer dims, types and data, declared input shapes, the opset), then converted and run.
pub fn onnx_fields(data: &[u8]) {
    if let Some(m) = onnx_fields_model(data) {
        convert_and_run(&m.encode_to_vec());
    }
}

/// The model [`onnx_fields`] converts for `data` (to look at a finding), or `None` when `data` picks
/// no seed or the mutations leave no graph.
pub fn onnx_fields_model(data: &[u8]) -> Option<ModelProto> {
    let mut u = Unstructured::new(data);
    let seeds = seed_models();
    let k = u.choose_index(seeds.len()).ok()?;
    let mut m = seeds[k].clone();
    let ops = ember_convert::onnx::ops::supported_ops();
    let rounds = u.int_in_range(1..=4u8).unwrap_or(1);
    for _ in 0..rounds {
        let g = m.graph.as_mut()?;
        let names: Vec<String> = g
            .node
            .iter()
            .flat_map(|n| n.input.iter().chain(&n.output))
            .chain(g.initializer.iter().map(|t| &t.name))
            .cloned()
            .collect();
        match u.int_in_range(0..=8u8).unwrap_or(0) {
            0 => {
                if let (Ok(i), Ok(op)) = (u.choose_index(g.node.len()), u.choose(&ops)) {
                    g.node[i].op_type = op.to_string();
                }
            }
            1 => {
                let Ok(i) = u.choose_index(g.node.len()) else {
                    continue;
                };
                let Ok(a) = u.choose_index(g.node[i].attribute.len()) else {
                    continue;
                };
                let attr = &mut g.node[i].attribute[a];
                match attr.r#type {
                    attribute_type::INT => attr.i = Some(interesting_i64(&mut u)),
                    attribute_type::FLOAT => attr.f = Some(u.arbitrary().unwrap_or(0.0)),
                    attribute_type::INTS => {
                        if let Ok(j) = u.choose_index(attr.ints.len()) {
                            attr.ints[j] = interesting_i64(&mut u);
                        } else {
                            attr.ints.push(interesting_i64(&mut u));
                        }
                    }
                    _ => attr.r#type = u.int_in_range(0..=14).unwrap_or(0),
                }
            }
            2 => {
                let Ok(i) = u.choose_index(g.node.len()) else {
                    continue;
                };
                let n = &mut g.node[i];
                match (u.choose(&names), u.int_in_range(0..=2u8).unwrap_or(0)) {
                    (Ok(name), 0) => n.input.push(name.clone()),
                    (Ok(name), 1) => {
                        if let Ok(j) = u.choose_index(n.input.len()) {
                            n.input[j] = name.clone();
                        }
                    }
                    _ => {
                        n.input.pop();
                    }
                }
            }
            3 => {
                let Ok(i) = u.choose_index(g.initializer.len()) else {
                    continue;
                };
                let t = &mut g.initializer[i];
                if let Ok(j) = u.choose_index(t.dims.len()) {
                    t.dims[j] = interesting_i64(&mut u);
                } else {
                    t.dims.push(interesting_i64(&mut u));
                }
            }
            4 => {
                let Ok(i) = u.choose_index(g.initializer.len()) else {
                    continue;
                };
                let t = &mut g.initializer[i];
                match u.int_in_range(0..=2u8).unwrap_or(0) {
                    0 => t.data_type = u.int_in_range(0..=23).unwrap_or(1),
                    1 => {
                        let keep = u.choose_index(t.raw_data.len() + 1).unwrap_or(0);
                        t.raw_data.truncate(keep);
                    }
                    _ => {
                        if let Ok(j) = u.choose_index(t.raw_data.len()) {
                            t.raw_data[j] = u.arbitrary().unwrap_or(0);
                        }
                    }
                }
            }
            5 => {
                use ember_convert::onnx::proto::{DimensionValue, TypeValue};
                let Ok(i) = u.choose_index(g.input.len()) else {
                    continue;
                };
                let Some(TypeValue::TensorType(t)) =
                    g.input[i].r#type.as_mut().and_then(|t| t.value.as_mut())
                else {
                    continue;
                };
                match u.int_in_range(0..=1u8).unwrap_or(0) {
                    0 => t.elem_type = u.int_in_range(0..=23).unwrap_or(1),
                    _ => {
                        let Some(shape) = t.shape.as_mut() else {
                            continue;
                        };
                        if let Ok(j) = u.choose_index(shape.dim.len()) {
                            shape.dim[j].value =
                                Some(DimensionValue::DimValue(interesting_i64(&mut u)));
                        }
                    }
                }
            }
            6 => {
                for o in m.opset_import.iter_mut() {
                    o.version = u.int_in_range(1..=25).unwrap_or(13);
                }
            }
            7 => {
                // A node repeated (its output then has two producers) or removed.
                let Ok(i) = u.choose_index(g.node.len()) else {
                    continue;
                };
                if u.arbitrary().unwrap_or(false) {
                    g.node.remove(i);
                } else {
                    let n = g.node[i].clone();
                    g.node.push(n);
                }
            }
            _ => {
                let Ok(i) = u.choose_index(g.node.len()) else {
                    continue;
                };
                let j = u.choose_index(g.node.len()).unwrap_or(i);
                g.node.swap(i, j);
            }
        }
    }
    Some(m)
}

fn interesting_i64(u: &mut Unstructured<'_>) -> i64 {
    match u.int_in_range(0..=6u8).unwrap_or(0) {
        0 => 0,
        1 => -1,
        2 => 1 << u.int_in_range(0..=62u32).unwrap_or(40),
        3 => i64::MIN,
        4 => i64::MAX,
        5 => u.int_in_range(-8..=8).unwrap_or(2),
        _ => u.arbitrary().unwrap_or(3),
    }
}

/// Raw bytes as a `.npy` file (the CLI's reader for inputs, expected outputs and calibration sets).
pub fn npy(data: &[u8]) {
    let limits = ember_convert::weights::Limits::default();
    if let Ok(t) = ember_convert::weights::npy::read(data, &limits) {
        let n = t.numel();
        assert_eq!(t.bytes().len(), n * t.dtype().bits() / 8, "{t:?}");
        std::hint::black_box(t.to_f64().map(|v| v.len()).ok());
    }
}

/// Raw bytes as a checkpoint, through each reader (the first byte picks it; the rest is the file) and
/// through format detection.
pub fn checkpoint(data: &[u8]) {
    use ember_convert::weights::{npz, safetensors, torch_legacy, torch_zip, Checkpoint, Limits};
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let limits = Limits::default();
    let read = match pick % 6 {
        0 => safetensors::read(file),
        1 => torch_zip::read(file, &limits),
        2 => torch_legacy::read(file, &limits),
        3 => torch_legacy::read_pickle(file, &limits),
        4 => npz::read(file, &limits),
        _ => Checkpoint::parse(file),
    };
    if let Ok(ckpt) = read {
        for (_, t) in ckpt.iter() {
            assert_eq!(t.bytes().len(), t.numel() * t.dtype().bits() / 8, "{t:?}");
            std::hint::black_box(t.to_f32().map(|v| v.len()).ok());
        }
    }
}
