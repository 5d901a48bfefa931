//! The GPU executor: a model lowered to CubeCL kernel launches, its weights uploaded once, its
//! activations in one CubeCL-managed buffer shared by lifetime (`plan_activations`), and the
//! memory-pool report.
//!
//! Every device buffer has 4-byte elements: f32 tensors as f32, int8 activations as f32 holding their
//! integer values (so data movement is shared with f32), int8 weights widened to i32, int32 weights as
//! they are. A graph input or output of int8 is written and read as those integer values.

mod index_map;
mod launch;
mod lower;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use cubecl::client::Client;
use cubecl::server::Handle;
use cubecl::MemoryScope;
use ember_core::format::{DType, Storage};
use ember_core::{plan, Model};

use crate::profile::{OpTiming, Profile, TimingSource};
use crate::Error;
use lower::{Lowered, OpView, Table, Work};

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

struct Step {
    index: usize,
    name: &'static str,
    output: usize,
    out_len: usize,
    work: Work,
    tables: Vec<Buffer>,
}

/// A graph input or output.
pub(crate) struct Io {
    pub id: usize,
    pub dims: Vec<u32>,
    pub len: usize,
    pub dtype: DType,
}

/// A model lowered onto one CubeCL device. A blob with shape variants is lowered once per variant when
/// the session opens, every variant over the same weight buffers and one activation buffer sized for the
/// largest plan; the variant that runs has its tensors, steps and graph inputs and outputs in the
/// fields below, the others wait in `parked`, and switching swaps them (no device allocation).
pub(crate) struct GpuSession {
    client: Client,
    device: String,
    tensors: Vec<Option<Buffer>>,
    steps: Vec<Step>,
    inputs: Vec<Io>,
    outputs: Vec<Io>,
    /// Every variant's program but the current one's (`None` at `current`).
    parked: Vec<Option<Program>>,
    /// The variant that runs (an index of `ember_core::Model::variant_dims`).
    current: usize,
    /// A one-element buffer bound where an optional input (a bias) is absent.
    dummy: Buffer,
    report: GpuMemoryReport,
}

/// One variant's lowered ops and buffers (see [`GpuSession`]).
struct Program {
    tensors: Vec<Option<Buffer>>,
    steps: Vec<Step>,
    inputs: Vec<Io>,
    outputs: Vec<Io>,
}

/// A variant lowered, before its activations are placed: its program, its activation plan, and the
/// element count of every tensor (scratch tensors after the model's).
struct Lowering {
    program: Program,
    plan: ActivationPlan,
    lens: Vec<usize>,
}

/// Weight buffers already uploaded, by their bytes' place in the blob's weights section (offset and
/// length) and whether they were widened from int8: variants share them, and a shorter slice of a
/// table that the converter stored once is a buffer of its own only if its length differs.
type Weights = std::collections::HashMap<(usize, usize, bool), Buffer>;

/// Runs `f`, turning a panic inside CubeCL or the driver into an error.
pub(crate) fn guarded<T>(device: &str, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let reason = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic with no message".into());
            Err(Error::Backend {
                device: device.to_string(),
                reason,
            })
        }
    }
}

/// Where the tensors the ops write live in the one activation buffer.
struct ActivationPlan {
    /// `(tensor id, byte offset)` of every tensor a kernel writes (not reshapes, which alias).
    offsets: Vec<(usize, u64)>,
    /// Size of the buffer.
    total_bytes: u64,
    /// What a buffer per tensor would take.
    tensor_bytes: u64,
}

/// Binding offsets into a storage buffer must be multiples of the device's
/// `minStorageBufferOffsetAlignment`; 256 bytes is the largest any Vulkan device asks (and wgpu's default).
const OFFSET_ALIGN: u64 = 256;

/// Places the output of every non-alias step in one buffer with core's greedy-by-size planner
/// (`ember_core::plan`, the converter's too): largest first, each at the lowest offset free for its
/// whole lifetime, as TFLM's greedy planner does for the CPU arena. A tensor lives from the step that
/// writes it to the last step that reads it or any reshape of it; graph outputs live to the end, so
/// they can be read after the run; an op's scratch tensors (`(id, step)`) live during their step only.
fn plan_activations(
    steps: &[Step],
    reads: &[Vec<usize>],
    lens: &[usize],
    graph_outputs: &[usize],
    scratch: &[(usize, usize)],
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

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Points every reshape's output in `steps` at its input's buffer in `tensors`.
fn resolve_aliases(
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
fn lower_program(
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
        for &id in ids.iter().chain([&output]) {
            // f32 and int8 tensors, and int32 weights (biases and requantization rows).
            let is_weight = matches!(records[id].storage, Storage::Weights { .. });
            let supported = match records[id].dtype {
                DType::F32 | DType::I8 => true,
                DType::I32 => is_weight,
                _ => false,
            };
            if !supported {
                return Err(unsupported(format!(
                    "tensor {id} is {:?}; the GPU runs f32 and int8 tensors (and int32 weights)",
                    records[id].dtype
                )));
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
        let Lowered {
            work,
            tables,
            scratch: scratch_lens,
        } = lower::lower(&view).map_err(unsupported)?;
        // Scratch tensors get ids after the model's; the planner gives them this step only.
        for len in scratch_lens {
            scratch.push((tensors.len(), steps.len(), len.max(1)));
            tensors.push(None);
        }
        // Upload the weights this op reads (once per blob: variants share them); int8 weights
        // widen to i32.
        for &id in &ids {
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
    let mut lens: Vec<usize> = (0..count).map(|id| numel(id).max(1)).collect();
    lens.extend(scratch.iter().map(|s| s.2));
    let graph_outputs: Vec<usize> = outputs.iter().map(|o| o.id).collect();
    let scratch_life: Vec<(usize, usize)> = scratch.iter().map(|s| (s.0, s.1)).collect();
    let plan = plan_activations(&steps, &reads, &lens, &graph_outputs, &scratch_life);
    Ok(Lowering {
        program: Program {
            tensors,
            steps,
            inputs,
            outputs,
        },
        plan,
        lens,
    })
}

impl GpuSession {
    /// Lowers every op (failing on the first the GPU cannot run) and uploads weights and tables.
    /// Lowers every op of every shape variant (failing on the first the GPU cannot run), uploads the
    /// weights once and the tables, and places every variant's activations in one buffer.
    pub(crate) fn new(model: &Model<'_>, client: Client, device: String) -> Result<Self, Error> {
        let mut report = GpuMemoryReport {
            bytes_in_use: 0,
            bytes_reserved: 0,
            bytes_padding: 0,
            allocations: 0,
            weights_bytes: 0,
            activation_bytes: 0,
            activation_tensor_bytes: 0,
            table_bytes: 0,
            planned_arena_bytes: model.arena_bytes() as u64,
        };
        let mut weights = Weights::new();
        let mut lowered = Vec::with_capacity(model.variant_count());
        for i in 0..model.variant_count() {
            let view = model.variant(i)?;
            lowered.push(lower_program(
                &view,
                &client,
                &device,
                &mut weights,
                &mut report,
            )?);
        }
        // One activation buffer, for the largest plan: every variant's tensors are views of it.
        let total = lowered
            .iter()
            .map(|l| l.plan.total_bytes)
            .max()
            .unwrap_or(0);
        report.activation_tensor_bytes = lowered
            .iter()
            .map(|l| l.plan.tensor_bytes)
            .max()
            .unwrap_or(0);
        report.activation_bytes = total;
        let arena = (total > 0).then(|| client.empty(total as usize));
        let mut parked = Vec::with_capacity(lowered.len());
        for Lowering {
            mut program,
            plan,
            lens,
        } in lowered
        {
            if let Some(arena) = &arena {
                for &(id, offset) in &plan.offsets {
                    let bytes = lens[id] as u64 * 4;
                    program.tensors[id] = Some(Buffer {
                        handle: arena
                            .clone()
                            .offset_start(offset)
                            .offset_end(total - offset - bytes),
                        len: lens[id],
                    });
                }
            }
            for input in &program.inputs {
                if program.tensors[input.id].is_none() {
                    let bytes = input.len.max(1) * 4;
                    report.activation_bytes += bytes as u64;
                    program.tensors[input.id] = Some(Buffer {
                        handle: client.create_from_slice(&vec![0; bytes]),
                        len: input.len.max(1),
                    });
                }
            }
            resolve_aliases(&mut program.tensors, &program.steps, &device)?;
            parked.push(Some(program));
        }
        let current = model.variant_index();
        let Some(Program {
            tensors,
            steps,
            inputs,
            outputs,
        }) = parked.get_mut(current).and_then(Option::take)
        else {
            return Err(Error::Model(ember_core::Error::NoVariant {
                variants: model.variant_count(),
            }));
        };
        let dummy = Buffer {
            handle: client.create_from_slice(&[0; 4]),
            len: 1,
        };
        Ok(GpuSession {
            client,
            device,
            tensors,
            steps,
            inputs,
            outputs,
            parked,
            current,
            dummy,
            report,
        })
    }

    /// How many shape variants the session holds (1 for a blob without).
    pub(crate) fn variant_count(&self) -> usize {
        self.parked.len()
    }

    /// The variant that runs.
    pub(crate) fn variant(&self) -> usize {
        self.current
    }

    /// The graph inputs of variant `i`.
    pub(crate) fn variant_inputs(&self, i: usize) -> Option<&[Io]> {
        match self.parked.get(i)? {
            None => Some(&self.inputs),
            Some(p) => Some(&p.inputs),
        }
    }

    /// Runs variant `i` from now on: its program and the current one trade places (no device
    /// allocation). Its inputs must be written before it runs.
    pub(crate) fn set_variant(&mut self, i: usize) -> Result<(), Error> {
        if i == self.current {
            return Ok(());
        }
        let variants = self.parked.len();
        let next = self
            .parked
            .get_mut(i)
            .and_then(Option::take)
            .ok_or(Error::Model(ember_core::Error::NoVariant { variants }))?;
        let old = Program {
            tensors: std::mem::replace(&mut self.tensors, next.tensors),
            steps: std::mem::replace(&mut self.steps, next.steps),
            inputs: std::mem::replace(&mut self.inputs, next.inputs),
            outputs: std::mem::replace(&mut self.outputs, next.outputs),
        };
        self.parked[self.current] = Some(old);
        self.current = i;
        Ok(())
    }

    /// Points every reshape's output at its input's buffer (again after an input buffer changes).
    fn resolve_aliases(&mut self) -> Result<(), Error> {
        resolve_aliases(&mut self.tensors, &self.steps, &self.device)
    }

    pub(crate) fn device(&self) -> &str {
        &self.device
    }

    pub(crate) fn inputs(&self) -> &[Io] {
        &self.inputs
    }

    pub(crate) fn outputs(&self) -> &[Io] {
        &self.outputs
    }

    /// Replaces graph input `index`'s buffer with `values` (length already checked).
    pub(crate) fn write_input(&mut self, index: usize, values: &[f32]) -> Result<(), Error> {
        let id = self.inputs[index].id;
        let int8 = self.inputs[index].dtype == DType::I8;
        if int8
            && values
                .iter()
                .any(|v| v.fract() != 0.0 || !(-128.0..=127.0).contains(v))
        {
            return Err(Error::Model(ember_core::Error::Unsupported {
                reason: "an int8 input takes integer values in -128..=127",
            }));
        }
        let client = &self.client;
        let buffer = guarded(&self.device, || {
            Ok(Buffer {
                handle: client.create_from_slice(&f32_bytes(values)),
                len: values.len().max(1),
            })
        })?;
        self.tensors[id] = Some(buffer);
        self.resolve_aliases()
    }

    /// Copies graph output `index` back to the host.
    pub(crate) fn read_output(&self, index: usize) -> Result<Vec<f32>, Error> {
        let io = &self.outputs[index];
        let buffer = self.tensors[io.id].clone().ok_or_else(|| Error::Backend {
            device: self.device.clone(),
            reason: format!("graph output {index} is written by no op"),
        })?;
        guarded(&self.device, || {
            let bytes = self
                .client
                .read_one(buffer.handle)
                .map_err(|e| self.backend(e))?;
            Ok(bytes
                .chunks_exact(4)
                .take(io.len)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        })
    }

    fn backend(&self, e: impl fmt::Display) -> Error {
        Error::Backend {
            device: self.device.clone(),
            reason: e.to_string(),
        }
    }

    fn sync(&self) -> Result<(), Error> {
        cubecl::future::block_on(self.client.sync()).map_err(|e| self.backend(e))
    }

    /// Launches every op, then waits for the device.
    pub(crate) fn run(&mut self) -> Result<(), Error> {
        guarded(&self.device, || {
            for step in &self.steps {
                self.launch_step(step)?;
            }
            self.sync()
        })
    }

    /// Runs every op, timing each: with GPU timestamps where CubeCL's runtime offers them on this
    /// device, otherwise on the host around a synchronized launch.
    pub(crate) fn run_profiled(&mut self) -> Result<Profile, Error> {
        guarded(&self.device, || {
            self.sync()?;
            let mut ops = Vec::with_capacity(self.steps.len());
            let mut device_timed = true;
            let start = Instant::now();
            for step in &self.steps {
                let launches = match &step.work {
                    Work::Launches(l) if step.out_len > 0 => l.len(),
                    _ => 0,
                };
                // A reshape (an alias) or an empty output launches nothing: nothing to time.
                let profiled = match launches {
                    0 => None,
                    _ => Some(self.client.profile(|| self.launch_step(step), step.name)),
                };
                let nanos = match profiled {
                    None => 0,
                    Some(Ok((launched, duration))) => {
                        launched?;
                        let method = duration.timing_method();
                        let ticks = cubecl::future::block_on(duration.resolve());
                        device_timed &= method == cubecl::profile::TimingMethod::Device;
                        ticks.map(|t| t.duration().as_nanos() as u64).unwrap_or(0)
                    }
                    Some(Err(_)) => {
                        device_timed = false;
                        let t = Instant::now();
                        self.launch_step(step)?;
                        self.sync()?;
                        t.elapsed().as_nanos() as u64
                    }
                };
                ops.push(OpTiming {
                    index: step.index,
                    op: step.name,
                    kernels: "cubecl",
                    nanos,
                });
            }
            self.sync()?;
            Ok(Profile {
                source: if device_timed {
                    TimingSource::GpuTimestamps
                } else {
                    TimingSource::HostSynchronized
                },
                total_nanos: start.elapsed().as_nanos() as u64,
                ops,
            })
        })
    }

    /// CubeCL's pool usage now, with the session's own counts.
    pub(crate) fn memory_report(&self) -> GpuMemoryReport {
        let mut report = self.report;
        let client = &self.client;
        if let Ok(usage) = catch_unwind(AssertUnwindSafe(|| {
            client.memory_report(MemoryScope::Device).usage()
        })) {
            report.bytes_in_use = usage.bytes_in_use;
            report.bytes_reserved = usage.bytes_reserved;
            report.bytes_padding = usage.bytes_padding;
            report.allocations = usage.number_allocs;
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use ember_core::AlignedBuf;
    use ember_tests::{convert_model, model_dir, read_npy_f32};

    use super::lower::{Launch, Work};
    use super::*;
    use crate::kernels::refused;
    use crate::Device;

    /// A session on Vulkan device 0 for the digits CNN and one of its inputs, or `None` (printed) when
    /// there is no Vulkan device and `EMBER_REQUIRE_GPU` is not `1`.
    fn digits_session() -> Option<(GpuSession, Vec<f32>)> {
        if crate::vulkan_devices().is_empty() {
            assert!(
                std::env::var("EMBER_REQUIRE_GPU").as_deref() != Ok("1"),
                "EMBER_REQUIRE_GPU=1 but this machine has no Vulkan device"
            );
            eprintln!("skipping GPU test: no Vulkan device on this machine");
            return None;
        }
        let blob = AlignedBuf::from_bytes(&convert_model("digits", &[("input", &[1, 1, 8, 8])]));
        let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
        let (client, name) = crate::session::open_gpu(Device::Vulkan(0)).unwrap();
        let session = GpuSession::new(&model, client, name).unwrap();
        let (_, pixels) = read_npy_f32(&model_dir("digits").join("x1.npy"));
        Some((session, pixels))
    }

    /// A kernel the device cannot run, in place of one op's, makes `run` (or the read after it) an
    /// error naming the device, not a panic; with the op's own kernels back, the same session runs
    /// and gives the first run's outputs.
    #[test]
    fn a_kernel_the_device_refuses_is_an_error_and_the_session_survives() {
        let Some((mut s, pixels)) = digits_session() else {
            return;
        };
        s.write_input(0, &pixels).unwrap();
        s.run().unwrap();
        let want = s.read_output(0).unwrap();
        let k = s
            .steps
            .iter()
            .position(|st| matches!(st.work, Work::Launches(_)))
            .unwrap();
        for (what, says) in [
            (refused::TOO_MUCH_SHARED_MEMORY, "shared"),
            (refused::INVALID, "must not compile"),
        ] {
            let own = std::mem::replace(
                &mut s.steps[k].work,
                Work::Launches(vec![Launch::Refused { what }]),
            );
            let err = s.run().and_then(|()| s.read_output(0)).unwrap_err();
            let Error::Backend { device, reason } = &err else {
                panic!("want Error::Backend, got {err:?}");
            };
            assert!(device.starts_with("vulkan:0"), "{err}");
            assert!(reason.to_lowercase().contains(says), "{err}");
            s.steps[k].work = own;
            s.write_input(0, &pixels).unwrap();
            s.run().unwrap();
            assert_eq!(s.read_output(0).unwrap(), want);
        }
    }
}
