//! Shared by the GPU tests: finding a Vulkan device (or skipping), single-op blobs written with the
//! blob writer, a small random generator, and the comparison against the CPU reference.

#![allow(dead_code)]

use ember_core::format::write::{write_blob, BlobParts};
use ember_core::format::{ArenaPlan, DType, Dims, ModelInfo, OpRecord, Storage, TensorRecord};
use ember_core::{AlignedBuf, OpKind};
use ember_gpu::{Device, DeviceSession};

/// `Device::Vulkan(0)`, or `None` (with the reason printed) when this machine has no Vulkan device.
/// With `EMBER_REQUIRE_GPU=1` a missing device fails the test instead.
pub fn vulkan() -> Option<Device> {
    if !ember_gpu::vulkan_devices().is_empty() {
        return Some(Device::Vulkan(0));
    }
    let reason = "no Vulkan device on this machine (for a software one: apt-get install \
                  mesa-vulkan-drivers libvulkan1)";
    if std::env::var("EMBER_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("EMBER_REQUIRE_GPU=1 but {reason}");
    }
    eprintln!("skipping GPU test: {reason}; set EMBER_REQUIRE_GPU=1 to fail instead");
    None
}

/// A small deterministic generator (xorshift64*), seeded by proptest.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng((seed ^ 0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// Uniform in `[lo, hi)`.
    pub fn float(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }

    pub fn floats(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.float(lo, hi)).collect()
    }

    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.int(0, items.len() - 1)]
    }
}

/// One input of a single-op model: a graph input (written at run time) or a weight tensor.
pub struct Operand {
    pub dims: Vec<usize>,
    pub values: Vec<f32>,
    pub weight: bool,
}

pub fn input(dims: &[usize], values: Vec<f32>) -> Operand {
    assert_eq!(dims.iter().product::<usize>(), values.len());
    Operand {
        dims: dims.to_vec(),
        values,
        weight: false,
    }
}

pub fn weight(dims: &[usize], values: Vec<f32>) -> Operand {
    Operand {
        weight: true,
        ..input(dims, values)
    }
}

fn align(n: usize) -> usize {
    n.div_ceil(16) * 16
}

fn record(dims: &[usize], storage: Storage) -> TensorRecord {
    TensorRecord {
        dtype: DType::F32,
        dims: Dims::from_slice(&dims.iter().map(|&d| d as u32).collect::<Vec<_>>()).unwrap(),
        storage,
        quant: None,
        first_use: 0,
        last_use: 0,
    }
}

/// A blob with one op: operands in order (graph inputs in the arena, weights in the weights section),
/// the output after them in the arena (no tensor shares bytes).
pub fn single_op_blob(kind: OpKind, operands: &[Operand], out_dims: &[usize]) -> AlignedBuf {
    let mut tensors = Vec::new();
    let mut weights = Vec::new();
    let mut arena = 0usize;
    let mut graph_inputs = heapless::Vec::new();
    for (id, op) in operands.iter().enumerate() {
        let storage = if op.weight {
            let offset = weights.len();
            for v in &op.values {
                weights.extend_from_slice(&v.to_le_bytes());
            }
            weights.resize(align(weights.len()), 0);
            Storage::Weights {
                offset: offset as u32,
            }
        } else {
            let offset = arena;
            arena = align(arena + 4 * op.values.len());
            graph_inputs.push(id as u32).unwrap();
            Storage::Arena {
                offset: offset as u32,
            }
        };
        tensors.push(record(&op.dims, storage));
    }
    let out = tensors.len() as u32;
    tensors.push(record(
        out_dims,
        Storage::Arena {
            offset: arena as u32,
        },
    ));
    arena = align(arena + 4 * out_dims.iter().product::<usize>()).max(16);
    let ops = [OpRecord {
        kind,
        inputs: heapless::Vec::from_slice(&(0..operands.len() as u32).collect::<Vec<_>>()).unwrap(),
        output: out,
    }];
    let info = ModelInfo {
        producer: b"ember-gpu test",
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
    let blob = write_blob(&BlobParts {
        info: &info,
        tensors: &tensors,
        ops: &ops,
        weights: &weights,
        names: None,
    })
    .expect("blob writes");
    AlignedBuf::from_bytes(&blob)
}

/// Runs the model on `device` with the graph inputs in order; returns output 0.
pub fn run_on(blob: &[u8], device: Device, inputs: &[&[f32]]) -> Vec<f32> {
    let mut session = DeviceSession::new(blob, device)
        .unwrap_or_else(|e| panic!("opening the session on {device}: {e}"));
    for (i, values) in inputs.iter().enumerate() {
        session.input(i).unwrap().write_f32(values).unwrap();
    }
    session
        .run()
        .unwrap_or_else(|e| panic!("running on {device}: {e}"));
    session.output(0).unwrap().into_vec()
}

/// Relative error within `1e-4`, measured against `max(|expected|, 1)` (an absolute 1e-4 near zero);
/// NaN matches NaN and infinities match by sign.
pub fn assert_close(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: output lengths differ");
    for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        let ok = (g.is_nan() && c.is_nan()) || g == c || (g - c).abs() <= 1e-4 * c.abs().max(1.0);
        assert!(ok, "{what}: element {i}: GPU {g}, CPU reference {c}");
    }
}

/// Builds the single-op model, runs it on the CPU reference kernels and on `gpu`, and compares.
pub fn check_op(gpu: Device, kind: OpKind, operands: &[Operand], out_dims: &[usize]) {
    let blob = single_op_blob(kind, operands, out_dims);
    let inputs: Vec<&[f32]> = operands
        .iter()
        .filter(|o| !o.weight)
        .map(|o| o.values.as_slice())
        .collect();
    let cpu = run_on(blob.as_bytes(), Device::Cpu, &inputs);
    let got = run_on(blob.as_bytes(), gpu, &inputs);
    let dims: Vec<_> = operands.iter().map(|o| o.dims.clone()).collect();
    assert_close(&format!("{kind:?} on {dims:?}"), &got, &cpu);
}
