//! The session API on a small model written by hand with the blob writer: a fully connected layer with a
//! fused Relu, reshaped (an alias), then a softmax. Expected values are computed here from the definitions.

use std::cell::Cell;

use ember_core::format::write::{write_blob, BlobParts};
use ember_core::format::{ArenaPlan, DType, Dims, ModelInfo, OpRecord, Storage, TensorRecord};
use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::fully_connected::FullyConnectedParams;
use ember_core::ops::nn::softmax::SoftmaxParams;
use ember_core::{AlignedBuf, Clock, Error, Model, OpKind, Session};

fn dims(d: &[u32]) -> Dims {
    Dims::from_slice(d).unwrap()
}

fn tensor(d: &[u32], storage: Storage, first_use: u32, last_use: u32) -> TensorRecord {
    TensorRecord {
        dtype: DType::F32,
        dims: dims(d),
        storage,
        quant: None,
        first_use,
        last_use,
    }
}

const W: [f32; 6] = [1.0, -1.0, 0.5, 2.0, 0.0, -3.0]; // [OUT=3, IN=2]
const B: [f32; 3] = [0.5, 0.0, -1.0];

/// x [1,2] -> FC(w [3,2], b [3]) + Relu -> h [1,3] -> Reshape (alias) -> r [3] -> Softmax -> y [3].
fn small_blob() -> Vec<u8> {
    blob_with_reshape(true)
}

/// [`small_blob`], with `r` planned on `h`'s bytes (`alias`) or on bytes of its own (a Reshape that runs
/// a kernel).
fn blob_with_reshape(alias: bool) -> Vec<u8> {
    // Without the alias, r takes x's bytes (free after the FC) and y takes h's (free after the Reshape).
    let (r_offset, y_offset) = if alias { (16, 0) } else { (0, 16) };
    let mut weights = Vec::new();
    for v in W {
        weights.extend_from_slice(&v.to_le_bytes());
    }
    weights.resize(32, 0); // the bias starts 16-aligned
    for v in B {
        weights.extend_from_slice(&v.to_le_bytes());
    }
    let tensors = [
        tensor(&[1, 2], Storage::Arena { offset: 0 }, 0, 0), // 0: x
        tensor(&[3, 2], Storage::Weights { offset: 0 }, 0, 0), // 1: w
        tensor(&[3], Storage::Weights { offset: 32 }, 0, 0), // 2: b
        tensor(&[1, 3], Storage::Arena { offset: 16 }, 0, 1), // 3: h
        tensor(&[3], Storage::Arena { offset: r_offset }, 1, 2), // 4: r
        tensor(&[3], Storage::Arena { offset: y_offset }, 2, u32::MAX), // 5: y
    ];
    let ops = [
        OpRecord {
            kind: OpKind::FullyConnected(FullyConnectedParams {
                act: Activation::Relu,
            }),
            inputs: heapless::Vec::from_slice(&[0, 1, 2]).unwrap(),
            output: 3,
        },
        OpRecord {
            kind: OpKind::Reshape,
            inputs: heapless::Vec::from_slice(&[3]).unwrap(),
            output: 4,
        },
        OpRecord {
            kind: OpKind::Softmax(SoftmaxParams { axis: 0 }),
            inputs: heapless::Vec::from_slice(&[4]).unwrap(),
            output: 5,
        },
    ];
    let info = ModelInfo {
        producer: b"hand-written test",
        source_hash: 0,
        tensor_count: tensors.len() as u32,
        op_count: ops.len() as u32,
        inputs: heapless::Vec::from_slice(&[0]).unwrap(),
        outputs: heapless::Vec::from_slice(&[5]).unwrap(),
        arena: ArenaPlan {
            persistent_bytes: 0,
            activation_bytes: 32,
            scratch_bytes: 0,
            lower_bound_bytes: 20,
        },
    };
    let names = ["x", "w", "b", "h", "r", "y", "fc", "reshape", "softmax"];
    write_blob(&BlobParts {
        info: &info,
        tensors: &tensors,
        ops: &ops,
        weights: &weights,
        names: Some(&names),
        variants: None,
    })
    .unwrap()
}

/// The expected output, from the definitions: relu(W x + b), then softmax in f64.
fn expected(x: [f32; 2]) -> [f32; 3] {
    let mut h = [0f64; 3];
    for o in 0..3 {
        let z = W[2 * o] as f64 * x[0] as f64 + W[2 * o + 1] as f64 * x[1] as f64 + B[o] as f64;
        h[o] = z.max(0.0);
    }
    let m = h.iter().cloned().fold(f64::MIN, f64::max);
    let e: Vec<f64> = h.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    [(e[0] / s) as f32, (e[1] / s) as f32, (e[2] / s) as f32]
}

#[test]
fn runs_and_matches_the_definition() {
    let blob = AlignedBuf::from_bytes(&small_blob());
    let model = Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.op_count(), 3);
    assert_eq!(model.tensor_name(5), Some("y"));
    assert_eq!(model.op_name(0), Some("fc"));
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    for x in [[1.0f32, 2.0], [-3.0, 0.25], [0.0, 0.0]] {
        assert_runs_as_defined(&mut s, x);
    }
}

/// `run_observed` hands over every op's output as it is written: the hidden layer `relu(W x + b)` (tensor
/// 3) and the reshape (tensor 4, the same bytes) before the softmax overwrites nothing of theirs, and the
/// graph output last, each as the definition gives it.
#[test]
fn run_observed_sees_every_intermediate_value() {
    let blob = AlignedBuf::from_bytes(&small_blob());
    let model = Model::parse(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    let x = [1.0f32, 2.0];
    s.input(0).unwrap().write_f32(&x).unwrap();
    let mut seen = Vec::new();
    s.run_observed(&mut |op, tensor, t| {
        seen.push((op, tensor, t.dims().to_vec(), t.as_f32().unwrap().to_vec()))
    })
    .unwrap();
    let hidden: Vec<f32> = (0..3)
        .map(|o| (W[2 * o] * x[0] + W[2 * o + 1] * x[1] + B[o]).max(0.0))
        .collect();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0], (0, 3, vec![1, 3], hidden.clone()));
    assert_eq!(seen[1], (1, 4, vec![3], hidden));
    assert_eq!((seen[2].0, seen[2].1), (2, 5));
    let want = expected(x);
    assert!(
        seen[2]
            .3
            .iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() < 1e-6),
        "{seen:?}"
    );
    // The graph output after an observed run is the one a plain run writes.
    assert_eq!(s.output(0).unwrap().as_f32().unwrap(), seen[2].3.as_slice());
}

/// Runs `s` on `x` and checks the output against [`expected`].
fn assert_runs_as_defined(s: &mut Session<'_>, x: [f32; 2]) {
    s.input(0).unwrap().write_f32(&x).unwrap();
    s.run().unwrap();
    let y = s.output(0).unwrap().as_f32().unwrap().to_vec();
    let want = expected(x);
    for k in 0..3 {
        assert!(
            (y[k] - want[k]).abs() < 1e-6,
            "x={x:?}: got {y:?}, want {want:?}"
        );
    }
}

/// A Reshape planned on its input's bytes runs no kernel, so a build without the Reshape entry accepts
/// it; one planned on bytes of its own needs the entry, and such a build refuses it at parse (not at
/// run). With the entry, both plans give the definition's output.
#[test]
fn reshape_needs_its_entry_only_when_it_is_not_an_alias() {
    use ember_core::kernels::{entry, family};
    const NO_RESHAPE: u64 = family::F32 & !entry::RESHAPE;
    for alias in [true, false] {
        let blob = AlignedBuf::from_bytes(&blob_with_reshape(alias));
        let model = Model::parse(blob.as_bytes()).unwrap();
        assert_eq!(
            model.op_entry(1).unwrap(),
            if alias { 0 } else { entry::RESHAPE }
        );
        let mut arena = AlignedBuf::zeroed(model.arena_bytes());
        let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
        assert_runs_as_defined(&mut s, [1.0, 2.0]);
        match Model::parse_only::<NO_RESHAPE>(blob.as_bytes()) {
            Ok(_) if alias => {}
            Err(Error::BadOp { op: 1, reason }) if !alias => {
                assert!(reason.contains("leaves out this op kind"), "{reason}")
            }
            Ok(_) => panic!("a Reshape with bytes of its own parsed without the Reshape entry"),
            Err(e) => panic!("alias={alias}: {e}"),
        }
    }
}

#[test]
fn memory_report_accounts_for_the_arena() {
    let blob = AlignedBuf::from_bytes(&small_blob());
    let model = Model::parse(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(100);
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    let before = s.memory_report();
    assert_eq!(
        (before.arena_bytes, before.used_bytes, before.planned_bytes),
        (100, 32, 32)
    );
    assert_eq!(
        (
            before.peak_bytes,
            before.lower_bound_bytes,
            before.scratch_bytes
        ),
        (0, 20, 0)
    );
    s.input(0).unwrap().write_f32(&[1.0, 1.0]).unwrap();
    s.run().unwrap();
    // The highest byte touched: h/r end at 16 + 12 = 28.
    assert_eq!(s.memory_report().peak_bytes, 28);
}

/// A clock that advances by 10 ticks each time it is read.
struct FakeClock(Cell<u64>);

impl Clock for FakeClock {
    fn now(&self) -> u64 {
        self.0.set(self.0.get() + 10);
        self.0.get()
    }
    fn ticks_per_second(&self) -> u64 {
        1000
    }
}

#[test]
fn run_profiled_reports_every_op_in_order() {
    let blob = AlignedBuf::from_bytes(&small_blob());
    let model = Model::parse(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    let clock = FakeClock(Cell::new(0));
    let mut seen = Vec::new();
    s.run_profiled(&clock, &mut |e| {
        seen.push((e.index, e.op, e.kernels, e.ticks))
    })
    .unwrap();
    assert_eq!(
        seen,
        vec![
            (0, "FullyConnected", "reference", 10),
            (1, "Reshape", "reference", 10),
            (2, "Softmax", "reference", 10)
        ]
    );
}

#[test]
fn io_errors_name_what_is_wrong() {
    let blob = AlignedBuf::from_bytes(&small_blob());
    let model = Model::parse(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    assert_eq!(
        s.input(0).unwrap().write_f32(&[1.0; 3]).unwrap_err(),
        Error::WrongLength {
            expected: 2,
            got: 3
        }
    );
    assert_eq!(
        s.input(1).err().unwrap(),
        Error::NoSuchTensor { index: 1, count: 1 }
    );
    assert_eq!(
        s.output(3).err().unwrap(),
        Error::NoSuchTensor { index: 3, count: 1 }
    );
    assert_eq!(s.input(0).unwrap().dims(), &[1, 2]);
}

#[test]
fn a_partially_overlapping_output_is_rejected_at_parse() {
    // Move y so that it overlaps x (which softmax does not read, fine) -- then make the FC output
    // overlap its own input: h at offset 0 clobbers x while it is read.
    let mut bytes = small_blob();
    let blob = AlignedBuf::from_bytes(&bytes);
    let model = Model::parse(blob.as_bytes()).unwrap();
    let h = model.tensor(3).unwrap();
    let encoded = postcard::to_allocvec(&h).unwrap();
    let mut moved = h.clone();
    moved.storage = Storage::Arena { offset: 0 };
    let replacement = postcard::to_allocvec(&moved).unwrap();
    assert_eq!(encoded.len(), replacement.len());
    let at = bytes
        .windows(encoded.len())
        .position(|w| w == encoded.as_slice())
        .unwrap();
    bytes[at..at + encoded.len()].copy_from_slice(&replacement);
    ember_core::format::write::fix_crc(&mut bytes);
    let blob = AlignedBuf::from_bytes(&bytes);
    let err = Model::parse(blob.as_bytes()).unwrap_err();
    assert_eq!(
        err,
        Error::BadOp {
            op: 0,
            reason: "output overlaps an input in the arena"
        }
    );
}
