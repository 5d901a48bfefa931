//! What a GPU session is made of: device buffers, the lowered ops of one shape variant (a
//! [`Program`]), the planner that places a program's activations in one buffer, the lowering of a
//! model's ops with its weights uploaded once per blob ([`lower_program`]), and the memory report.
//! `mod.rs` assembles them into a `GpuSession` and runs it.

use std::fmt;

use cubecl::client::Client;
use cubecl::server::Handle;
use ember_core::format::{DType, Storage};
use ember_core::{plan, AlignedBuf, Model};

use super::host::{self, HostIn, HostOp};
use super::lower::{Lowered, OpView, Table, Work};
use crate::Error;

/// Where a GPU session's device memory went: CubeCL's memory-pool usage plus what the session itself
/// uploaded and allocated. The pool figures cover the whole device as this process uses it (CubeCL keeps
/// one client per device, shared by every session on it); the session figures are this session's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuMemoryReport {
    /// Bytes in live allocations (CubeCL pool `bytes_in_use`), over every stream of the device.
    pub bytes_in_use: u64,
    /// Bytes the pools reserved from the driver (`bytes_reserved`).
    pub bytes_reserved: u64,
    /// Padding inside live allocations (`bytes_padding`).
    pub bytes_padding: u64,
    /// Live allocations (`number_allocs`).
    pub allocations: u64,
    /// Weights uploaded when the session opened.
    pub weights_bytes: u64,
    /// Device bytes for activations: graph inputs, plus one planned buffer in which the tensors the ops
    /// write share space when their lifetimes do not overlap (reshapes share their input's bytes).
    pub activation_bytes: u64,
    /// What the activations would take with one buffer per tensor (the planner's saving is the
    /// difference).
    pub activation_tensor_bytes: u64,
    /// Per-op tables (shapes, strides, index maps, resize tables).
    pub table_bytes: u64,
    /// The blob's planned CPU arena, for comparison (activations share bytes there; here they don't).
    pub planned_arena_bytes: u64,
}

impl fmt::Display for GpuMemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "memory pool: {} B in use, {} B reserved, {} B padding, {} allocations",
            self.bytes_in_use, self.bytes_reserved, self.bytes_padding, self.allocations
        )?;
        write!(
            f,
            "session: {} B weights, {} B activations (planned; {} B with a buffer per tensor), {} B op \
             tables (CPU arena plan: {} B)",
            self.weights_bytes,
            self.activation_bytes,
            self.activation_tensor_bytes,
            self.table_bytes,
            self.planned_arena_bytes
        )
    }
}

/// A device buffer and its length in f32 (or u32) elements.
#[derive(Clone)]
pub(crate) struct Buffer {
    pub handle: Handle,
    pub len: usize,
}

pub(super) struct Step {
    pub(super) index: usize,
    pub(super) name: &'static str,
    pub(super) output: usize,
    pub(super) out_len: usize,
    pub(super) work: Work,
    pub(super) tables: Vec<Buffer>,
}

/// A graph input or output.
pub(crate) struct Io {
    pub id: usize,
    pub dims: Vec<u32>,
    pub len: usize,
    pub dtype: DType,
}

/// One variant's lowered ops and buffers (see [`GpuSession`]).
pub(super) struct Program {
    pub(super) tensors: Vec<Option<Buffer>>,
    pub(super) steps: Vec<Step>,
    pub(super) inputs: Vec<Io>,
    pub(super) outputs: Vec<Io>,
    /// The bytes of every activation the host holds (a dtype the device does not: `host.rs`), by
    /// tensor id; `None` for the device's tensors.
    pub(super) host: Vec<Option<Vec<u8>>>,
}

/// A variant lowered, before its activations are placed: its program, its activation plan, and the
/// element count of every tensor (scratch tensors after the model's).
pub(super) struct Lowering {
    pub(super) program: Program,
    pub(super) plan: ActivationPlan,
    pub(super) lens: Vec<usize>,
}

/// Weight buffers already uploaded, by their bytes' place in the blob's weights section (offset and
/// length) and whether they were widened from int8: variants share them, and a shorter slice of a
/// table that the converter stored once is a buffer of its own only if its length differs.
pub(super) type Weights = std::collections::HashMap<(usize, usize, bool), Buffer>;

/// Where the tensors the ops write live in the one activation buffer.
pub(super) struct ActivationPlan {
    /// `(tensor id, byte offset)` of every tensor a kernel writes (not reshapes, which alias).
    pub(super) offsets: Vec<(usize, u64)>,
    /// Size of the buffer.
    pub(super) total_bytes: u64,
    /// What a buffer per tensor would take.
    pub(super) tensor_bytes: u64,
}

/// Binding offsets into a storage buffer must be multiples of the device's
/// `minStorageBufferOffsetAlignment`; 256 bytes is the largest any Vulkan device asks (and wgpu's default).
const OFFSET_ALIGN: u64 = 256;

/// Places the output of every non-alias step in one buffer with core's greedy-by-size planner
/// (`ember_core::plan`, the converter's too): largest first, each at the lowest offset free for its
/// whole lifetime, as TFLM's greedy planner does for the CPU arena. A tensor lives from the step that
/// writes it to the last step that reads it or any reshape of it; graph outputs live to the end, so
/// they can be read after the run; an op's scratch tensors (`(id, step)`) live during their step only.
/// A lifetime the converter extended over a loop's iterations (`spans`, the blob's records' first and
/// last use by tensor) is kept whole: a loop runs its steps again.
fn plan_activations(
    steps: &[Step],
    reads: &[Vec<usize>],
    lens: &[usize],
    graph_outputs: &[usize],
    scratch: &[(usize, usize)],
    spans: &[(usize, usize)],
) -> ActivationPlan {
    // Reshapes alias their input: a tensor's storage root is the first non-alias ancestor.
    let mut root: Vec<usize> = (0..lens.len()).collect();
    for step in steps {
        if let Work::Alias { x } = step.work {
            root[step.output] = root[x];
        }
    }
    let mut life: std::collections::BTreeMap<usize, (usize, usize)> = Default::default();
    for (k, step) in steps.iter().enumerate() {
        if !matches!(step.work, Work::Alias { .. }) {
            life.insert(step.output, (k, k));
        }
    }
    for &(id, k) in scratch {
        life.insert(id, (k, k));
    }
    for (k, ids) in reads.iter().enumerate() {
        for &id in ids {
            if let Some(l) = life.get_mut(&root[id]) {
                l.1 = l.1.max(k);
            }
        }
    }
    for &id in graph_outputs {
        if let Some(l) = life.get_mut(&root[id]) {
            l.1 = usize::MAX;
        }
    }
    for (id, &(first, last)) in spans.iter().enumerate() {
        if let Some(l) = life.get_mut(&root[id]) {
            *l = (l.0.min(first), l.1.max(last));
        }
    }
    // Sizes rounded up to `OFFSET_ALIGN` (a multiple of the planner's alignment), so every offset is a
    // multiple of it too.
    let align = OFFSET_ALIGN as usize;
    let buffers: Vec<plan::Buffer> = life
        .iter()
        .map(|(&id, &(first_use, last_use))| plan::Buffer {
            size: (lens[id] * 4).div_ceil(align) * align,
            first_use,
            last_use,
        })
        .collect();
    let placement = plan::greedy_by_size(&buffers);
    ActivationPlan {
        offsets: life
            .keys()
            .zip(&placement.offsets)
            .map(|(&id, &offset)| (id, offset as u64))
            .collect(),
        total_bytes: placement.total as u64,
        tensor_bytes: life.keys().map(|&id| lens[id] as u64 * 4).sum(),
    }
}

pub(super) fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Points every reshape's output in `steps` at its input's buffer in `tensors`.
pub(super) fn resolve_aliases(
    tensors: &mut [Option<Buffer>],
    steps: &[Step],
    device: &str,
) -> Result<(), Error> {
    for step in steps {
        if let Work::Alias { x } = step.work {
            let buffer = tensors[x].clone().ok_or_else(|| Error::UnsupportedOp {
                index: step.index,
                op: step.name,
                device: device.to_string(),
                reason: format!("reshape input {x} is produced by no op and is no graph input"),
            })?;
            tensors[step.output] = Some(buffer);
        }
    }
    Ok(())
}

/// Lowers every op of one variant (`model`, a view of it) and uploads its weights (through `weights`,
/// once per blob) and tables; its activations are placed by the caller.
pub(super) fn lower_program(
    model: &Model<'_>,
    client: &Client,
    device: &str,
    weights_cache: &mut Weights,
    report: &mut GpuMemoryReport,
) -> Result<Lowering, Error> {
    let weights = model.weights();
    let count = model.tensor_count();
    let mut records = Vec::with_capacity(count);
    for id in 0..count {
        records.push(model.tensor(id).ok_or(ember_core::Error::BadTensor {
            tensor: id as u32,
            reason: "record does not decode",
        })?);
    }
    let dims: Vec<Vec<usize>> = records
        .iter()
        .map(|t| t.dims.iter().map(|&d| d as usize).collect())
        .collect();
    let numel = |id: usize| dims[id].iter().product::<usize>();
    // A weight tensor's bytes, in place in the blob.
    let weight_bytes = |id: usize| -> Option<&[u8]> {
        let Storage::Weights { offset } = records[id].storage else {
            return None;
        };
        let len = numel(id) * records[id].dtype.size();
        weights.get(offset as usize..offset as usize + len)
    };
    let as_f32 = |bytes: &[u8]| -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };

    let mut tensors: Vec<Option<Buffer>> = vec![None; count];
    let mut steps = Vec::with_capacity(model.op_count());
    let mut reads: Vec<Vec<usize>> = Vec::with_capacity(model.op_count());
    // (tensor id, step, elements) of every op's scratch tensors.
    let mut scratch: Vec<(usize, usize, usize)> = Vec::new();
    for index in 0..model.op_count() {
        let op = model.op(index).ok_or(ember_core::Error::BadOp {
            op: index as u32,
            reason: "record does not decode",
        })?;
        let name = op.kind.name();
        let unsupported = |reason: String| Error::UnsupportedOp {
            index,
            op: name,
            device: device.to_string(),
            reason,
        };
        let ids: Vec<usize> = op.inputs.iter().map(|&i| i as usize).collect();
        let output = op.output as usize;
        // The device holds f32 and int8 tensors, and int32 weights (biases and requantization
        // rows); an op that reads or writes another type runs on the host.
        let mut off_device = None;
        for &id in ids.iter().chain([&output]) {
            let is_weight = matches!(records[id].storage, Storage::Weights { .. });
            let dtype = records[id].dtype;
            if !(host::on_device(dtype) || dtype == DType::I32 && is_weight) && off_device.is_none()
            {
                off_device = Some(format!(
                    "tensor {id} is {}, which the device does not hold",
                    dtype.name()
                ));
            }
            if numel(id) >= u32::MAX as usize {
                return Err(unsupported(format!(
                    "tensor {id} has more than 2^32 elements"
                )));
            }
        }
        // Lowering reads weight values only to build index maps (a gather's indices).
        let input_weights: Vec<Option<Vec<f32>>> = ids
            .iter()
            .map(|&id| match op.kind {
                ember_core::OpKind::Gather(_) => weight_bytes(id).map(as_f32),
                _ => None,
            })
            .collect();
        let view = OpView {
            kind: op.kind,
            inputs: &ids,
            input_dims: ids.iter().map(|&id| dims[id].as_slice()).collect(),
            output_dims: &dims[output],
            output_dtype: records[output].dtype,
            input_weights: input_weights.iter().map(|w| w.as_deref()).collect(),
            scratch_base: tensors.len(),
        };
        let lowered = match off_device {
            Some(why) => Err(why),
            None => super::lower::lower(&view),
        };
        let Lowered {
            work,
            tables,
            scratch: scratch_lens,
        } = match lowered {
            Ok(lowered) => lowered,
            // What the device cannot run, the host does, in the same session.
            Err(why) => Lowered {
                work: Work::Host(Box::new(HostOp {
                    kind: op.kind,
                    inputs: ids
                        .iter()
                        .map(|&id| HostIn {
                            id,
                            dtype: records[id].dtype,
                            dims: dims[id].clone(),
                            weight: weight_bytes(id).map(AlignedBuf::from_bytes),
                        })
                        .collect(),
                    out_dtype: records[output].dtype,
                    out_dims: dims[output].clone(),
                    why,
                })),
                tables: Vec::new(),
                scratch: Vec::new(),
            },
        };
        let on_host = matches!(work, Work::Host(_));
        // Scratch tensors get ids after the model's; the planner gives them this step only.
        for len in scratch_lens {
            scratch.push((tensors.len(), steps.len(), len.max(1)));
            tensors.push(None);
        }
        // Upload the weights this op reads (once per blob: variants share them); int8 weights
        // widen to i32.
        for &id in ids.iter().filter(|_| !on_host) {
            if let (Some(bytes), None) = (weight_bytes(id), &tensors[id]) {
                let Storage::Weights { offset } = records[id].storage else {
                    continue;
                };
                let key = (offset as usize, bytes.len(), records[id].dtype == DType::I8);
                if let Some(shared) = weights_cache.get(&key) {
                    tensors[id] = Some(shared.clone());
                    continue;
                }
                let widened: Vec<u8>;
                let bytes = match records[id].dtype {
                    DType::I8 => {
                        widened = bytes
                            .iter()
                            .flat_map(|&b| i32::from(b as i8).to_le_bytes())
                            .collect();
                        &widened[..]
                    }
                    _ => bytes,
                };
                let bytes = if bytes.is_empty() { &[0; 4][..] } else { bytes };
                report.weights_bytes += bytes.len() as u64;
                let buffer = Buffer {
                    handle: client.create_from_slice(bytes),
                    len: numel(id).max(1),
                };
                weights_cache.insert(key, buffer.clone());
                tensors[id] = Some(buffer);
            }
        }
        let tables = tables
            .into_iter()
            .map(|t| {
                let (bytes, len) = match t {
                    Table::U32(v) => (
                        v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
                        v.len(),
                    ),
                    Table::F32(v) => (f32_bytes(&v), v.len()),
                    Table::I32(v) => (
                        v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
                        v.len(),
                    ),
                };
                let bytes = if bytes.is_empty() { vec![0; 4] } else { bytes };
                report.table_bytes += bytes.len() as u64;
                Buffer {
                    handle: client.create_from_slice(&bytes),
                    len: len.max(1),
                }
            })
            .collect();
        // Activations are placed once every op is known (`plan_activations`).
        reads.push(ids.clone());
        steps.push(Step {
            index,
            name,
            output,
            out_len: numel(output),
            work,
            tables,
        });
    }
    let io = |ids: &[u32]| -> Vec<Io> {
        ids.iter()
            .map(|&id| Io {
                id: id as usize,
                dims: records[id as usize].dims.to_vec(),
                len: numel(id as usize),
                dtype: records[id as usize].dtype,
            })
            .collect()
    };
    let (inputs, outputs) = (io(model.inputs()), io(model.outputs()));
    let host = records
        .iter()
        .enumerate()
        .map(|(id, t)| {
            let activation = matches!(t.storage, Storage::Arena { .. });
            (activation && !host::on_device(t.dtype)).then(|| vec![0; numel(id) * t.dtype.size()])
        })
        .collect();
    let mut lens: Vec<usize> = (0..count).map(|id| numel(id).max(1)).collect();
    lens.extend(scratch.iter().map(|s| s.2));
    let graph_outputs: Vec<usize> = outputs.iter().map(|o| o.id).collect();
    let scratch_life: Vec<(usize, usize)> = scratch.iter().map(|s| (s.0, s.1)).collect();
    let spans: Vec<(usize, usize)> = records
        .iter()
        .map(|r| match r.last_use {
            u32::MAX => (r.first_use as usize, usize::MAX),
            last => (r.first_use as usize, last as usize),
        })
        .collect();
    let plan = plan_activations(&steps, &reads, &lens, &graph_outputs, &scratch_life, &spans);
    Ok(Lowering {
        program: Program {
            tensors,
            steps,
            inputs,
            outputs,
            host,
        },
        plan,
        lens,
    })
}
