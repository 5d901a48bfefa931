//! The GPU executor: a model lowered to CubeCL kernel launches, its weights uploaded once, its
//! activations in one CubeCL-managed buffer shared by lifetime (`program.rs`), and the
//! memory-pool report.
//!
//! Every device buffer has 4-byte elements: f32 tensors as f32, int8 activations as f32 holding their
//! integer values (so data movement is shared with f32), int8 weights widened to i32, int32 weights as
//! they are. A graph input or output of int8 is written and read as those integer values.

pub(crate) mod host;
mod index_map;
mod launch;
mod lower;
mod program;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use cubecl::bytes::Bytes;
use cubecl::client::Client;
use cubecl::MemoryScope;
use ember_core::format::DType;
use ember_core::ops::control::{ControlOp, Flow};
use ember_core::{AlignedBuf, Model, OpKind};

use crate::profile::{OpTiming, Profile, TimingSource};
use crate::Error;
use host::HostIn;
use lower::Work;
pub use program::GpuMemoryReport;
use program::{
    f32_bytes, lower_program, resolve_aliases, Buffer, Io, Lowering, Program, Step, Weights,
};

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
    /// The activations the host holds (`host.rs`), by tensor id.
    host: Vec<Option<Vec<u8>>>,
    /// Every variant's program but the current one's (`None` at `current`).
    parked: Vec<Option<Program>>,
    /// The variant that runs (an index of `ember_core::Model::variant_dims`).
    current: usize,
    /// A one-element buffer bound where an optional input (a bias) is absent.
    dummy: Buffer,
    report: GpuMemoryReport,
}

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
                if program.tensors[input.id].is_none() && host::on_device(input.dtype) {
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
            host,
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
            host,
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
            host: std::mem::replace(&mut self.host, next.host),
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

    /// The ops of the current variant that run on the host (`host.rs`): op index, op name, and why.
    pub(crate) fn host_ops(&self) -> Vec<(usize, &'static str, String)> {
        self.steps
            .iter()
            .filter_map(|s| match &s.work {
                Work::Host(op) => Some((s.index, s.name, op.why.clone())),
                _ => None,
            })
            .collect()
    }

    /// Writes graph input `index` (length already checked): into its device buffer in place, or,
    /// for a type the host holds, into its host bytes.
    pub(crate) fn write_input(&mut self, index: usize, values: &[f32]) -> Result<(), Error> {
        let id = self.inputs[index].id;
        let dtype = self.inputs[index].dtype;
        if let Some(held) = self.host.get_mut(id).and_then(Option::as_mut) {
            let bytes = host::from_f32(dtype, values).map_err(|reason| Error::Backend {
                device: self.device.clone(),
                reason: format!("graph input {index}: {reason}"),
            })?;
            held.copy_from_slice(&bytes);
            return Ok(());
        }
        let int8 = dtype == DType::I8;
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
        // In place when the buffer has the input's size (no device allocation per run).
        if let Some(buffer) = self.tensors[id].as_ref().filter(|b| b.len == values.len()) {
            let handle = buffer.handle.clone();
            return guarded(&self.device, || {
                client.write(&handle, Bytes::from_bytes_vec(f32_bytes(values)));
                Ok(())
            });
        }
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
        if let Some(held) = self.host.get(io.id).and_then(Option::as_ref) {
            return Ok(host::as_f32(io.dtype, held));
        }
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

    /// Launches every op, then waits for the device. An op the host runs waits for the ops before
    /// it (it reads their outputs back).
    pub(crate) fn run(&mut self) -> Result<(), Error> {
        let device = self.device.clone();
        guarded(&device, || {
            let mut flow = Flow::default();
            let mut k = 0;
            while k < self.steps.len() {
                k = self.run_step(k, &mut flow)?;
            }
            self.sync()
        })
    }

    /// Runs step `k`; returns the step that runs next (`k + 1` but after a control op).
    fn run_step(&mut self, k: usize, flow: &mut Flow) -> Result<usize, Error> {
        match &self.steps[k].work {
            Work::Host(_) => self.run_host(k, flow),
            _ => self.launch_step(&self.steps[k]).map(|()| k + 1),
        }
    }

    /// The bytes tensor `id` holds now (a weight's from the blob, the host's, a device tensor's read
    /// back).
    fn tensor_bytes(&self, x: &HostIn, at: usize) -> Result<AlignedBuf, Error> {
        Ok(
            match (&x.weight, self.host.get(x.id).and_then(Option::as_ref)) {
                (Some(w), _) => w.clone(),
                (None, Some(held)) => AlignedBuf::from_bytes(held),
                (None, None) => {
                    let buffer = self.tensors[x.id].clone().ok_or_else(|| {
                        self.backend(format!("op {at}: tensor {} has no buffer", x.id))
                    })?;
                    let raw = self
                        .client
                        .read_one(buffer.handle)
                        .map_err(|e| self.backend(e))?;
                    let len = x.dims.iter().product();
                    AlignedBuf::from_bytes(&host::from_device(x.dtype, &raw, len))
                }
            },
        )
    }

    /// Runs host op `k`: reads its inputs (weights from the blob, the host's tensors, device tensors
    /// read back), runs it with the reference kernels, and writes its output where it lives. A control
    /// op then says which step runs next (a loop's head, end, a branch), through `flow`.
    fn run_host(&mut self, k: usize, flow: &mut Flow) -> Result<usize, Error> {
        let step = &self.steps[k];
        let Work::Host(op) = &step.work else {
            return Ok(k + 1);
        };
        let inputs = op
            .inputs
            .iter()
            .map(|x| self.tensor_bytes(x, step.index))
            .collect::<Result<Vec<_>, _>>()?;
        // A stacked output keeps the slices earlier iterations wrote.
        let initial = match op.kind {
            OpKind::Control(ControlOp::ScanWrite { .. }) => {
                let y = HostIn {
                    id: step.output,
                    dtype: op.out_dtype,
                    dims: op.out_dims.clone(),
                    weight: None,
                };
                Some(self.tensor_bytes(&y, step.index)?)
            }
            _ => None,
        };
        let (out, next) = host::run(op, &inputs, initial, step.index, flow).map_err(|e| {
            Error::UnsupportedOp {
                index: step.index,
                op: step.name,
                device: self.device.clone(),
                reason: format!("on the host: {e}"),
            }
        })?;
        let (output, out_dtype, out_len) = (step.output, op.out_dtype, step.out_len);
        if let Some(held) = self.host.get_mut(output).and_then(Option::as_mut) {
            held.copy_from_slice(out.as_bytes());
        } else if out_len > 0 {
            let buffer = self.tensors[output]
                .clone()
                .ok_or_else(|| self.backend(format!("tensor {output} has no buffer")))?;
            let bytes = host::to_device(out_dtype, out.as_bytes());
            self.client
                .write(&buffer.handle, Bytes::from_bytes_vec(bytes));
        }
        // Steps are the ops, in order.
        Ok(next)
    }

    /// Runs every op, timing each: with GPU timestamps where CubeCL's runtime offers them on this
    /// device, otherwise on the host around a synchronized launch.
    pub(crate) fn run_profiled(&mut self) -> Result<Profile, Error> {
        let device = self.device.clone();
        guarded(&device, || {
            self.sync()?;
            let mut ops = Vec::with_capacity(self.steps.len());
            let mut device_timed = true;
            let start = Instant::now();
            let mut flow = Flow::default();
            let mut next = 0;
            while next < self.steps.len() {
                let k = next;
                next = k + 1;
                if matches!(self.steps[k].work, Work::Host(_)) {
                    // On the host: timed there, after the device finished what it reads.
                    self.sync()?;
                    let t = Instant::now();
                    next = self.run_host(k, &mut flow)?;
                    self.sync()?;
                    ops.push(OpTiming {
                        index: self.steps[k].index,
                        op: self.steps[k].name,
                        kernels: "host",
                        nanos: t.elapsed().as_nanos() as u64,
                    });
                    continue;
                }
                let step = &self.steps[k];
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
