//! `DeviceSession`: one model on one device, with the calls of `ember_core::Session` (write inputs, run,
//! run profiled, read outputs, memory report) and no backend type parameter: an enum inside.

use std::fmt;

use ember_core::Model;

use crate::cpu::CpuBackend;
use crate::device::vulkan_devices;
use crate::gpu::{guarded, GpuMemoryReport, GpuSession};
use crate::profile::Profile;
use crate::{Device, Error};

enum Backend<'b> {
    Cpu(Box<CpuBackend<'b>>),
    Gpu(Box<GpuSession>),
}

/// A model bound to a device, ready to run. The blob is borrowed (weights are not copied on the CPU;
/// on a GPU they are uploaded once when the session opens).
pub struct DeviceSession<'b> {
    device: Device,
    backend: Backend<'b>,
    /// The blob's own view: its variants, and the pad values of its inputs.
    model: Model<'b>,
}

/// Where a session's memory went: the CPU arena report, or the GPU pool report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceMemoryReport {
    /// `Device::Cpu`: the arena, as `ember_core::Session::memory_report` gives it.
    Cpu(ember_core::MemoryReport),
    /// A GPU: CubeCL's memory pools and the session's buffers.
    Gpu(GpuMemoryReport),
}

impl fmt::Display for DeviceMemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceMemoryReport::Cpu(r) => write!(
                f,
                "arena: {} B used of {} B (persistent {} B, planned {} B, lower bound {} B, peak {} B, \
                 scratch {} B)",
                r.used_bytes,
                r.arena_bytes,
                r.persistent_bytes,
                r.planned_bytes,
                r.lower_bound_bytes,
                r.peak_bytes,
                r.scratch_bytes
            ),
            DeviceMemoryReport::Gpu(r) => write!(f, "{r}"),
        }
    }
}

/// A writable graph input of a [`DeviceSession`].
pub struct DeviceInput<'s, 'b> {
    session: &'s mut DeviceSession<'b>,
    index: usize,
    dims: Vec<u32>,
    len: usize,
}

impl DeviceInput<'_, '_> {
    /// Dimensions (as the source model declared them).
    pub fn dims(&self) -> &[u32] {
        &self.dims
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the input holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `values` in; the length must match.
    pub fn write_f32(&mut self, values: &[f32]) -> Result<(), Error> {
        if values.len() != self.len {
            return Err(ember_core::Error::WrongLength {
                expected: self.len,
                got: values.len(),
            }
            .into());
        }
        match &mut self.session.backend {
            Backend::Cpu(cpu) => cpu.write_input(self.index, values),
            Backend::Gpu(gpu) => gpu.write_input(self.index, values),
        }
    }

    /// Writes `values`, of `shape` (the input's own, or smaller on any axes), padding each axis at
    /// its end with the model's pad value for this input (`ember_core::Error::NoPadValue` if it
    /// declares none). The padding is done on the host, and the padded tensor written.
    pub fn write_padded(&mut self, shape: &[u32], values: &[f32]) -> Result<(), Error> {
        if shape == self.dims.as_slice() {
            return self.write_f32(values);
        }
        let pad = self
            .session
            .model
            .pad_value(self.index)
            .ok_or(ember_core::Error::NoPadValue { input: self.index })?;
        let src: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut dst = vec![0u8; self.len * 4];
        ember_core::ops::array::pad::pad_end_bytes(
            4,
            &(pad as f32).to_le_bytes(),
            &src,
            shape,
            &mut dst,
            &self.dims,
        )?;
        let padded: Vec<f32> = dst
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        self.write_f32(&padded)
    }
}

/// A graph output copied back from the device.
#[derive(Clone, Debug)]
pub struct DeviceOutput {
    dims: Vec<u32>,
    values: Vec<f32>,
}

impl DeviceOutput {
    /// Dimensions (as the source model declared them).
    pub fn dims(&self) -> &[u32] {
        &self.dims
    }

    /// The elements.
    pub fn as_f32(&self) -> &[f32] {
        &self.values
    }

    /// Copies the elements out; the length must match.
    pub fn read_f32(&self, out: &mut [f32]) -> Result<(), Error> {
        if out.len() != self.values.len() {
            return Err(ember_core::Error::WrongLength {
                expected: self.values.len(),
                got: out.len(),
            }
            .into());
        }
        out.copy_from_slice(&self.values);
        Ok(())
    }

    /// The elements, owned.
    pub fn into_vec(self) -> Vec<f32> {
        self.values
    }
}

fn unavailable(device: Device, reason: impl Into<String>) -> Error {
    Error::DeviceUnavailable {
        requested: device.to_string(),
        reason: reason.into(),
        available: Device::available_list(),
    }
}

/// A CubeCL client for a GPU device, and the device's name for messages.
pub(crate) fn open_gpu(device: Device) -> Result<(cubecl::client::Client, String), Error> {
    match device {
        Device::Vulkan(i) => {
            let info = vulkan_devices().get(i).ok_or_else(|| {
                unavailable(
                    device,
                    format!("this machine has {} Vulkan devices", vulkan_devices().len()),
                )
            })?;
            let name = format!("vulkan:{i} ({})", info.name);
            let cube = guarded(&name, || {
                cubecl::Device::vulkan(info.wgpu_kind())
                    .map_err(|e| unavailable(device, e.to_string()))
            })?;
            let client = guarded(&name, || Ok(cube.client()))?;
            Ok((client, name))
        }
        #[cfg(target_vendor = "apple")]
        Device::Metal => {
            let name = "metal".to_string();
            let cube = guarded(&name, || {
                cubecl::Device::wgpu(cubecl::device::WgpuDeviceKind::DefaultDevice)
                    .map_err(|e| unavailable(device, e.to_string()))
            })?;
            let client = guarded(&name, || Ok(cube.client()))?;
            Ok((client, name))
        }
        #[cfg(not(target_vendor = "apple"))]
        Device::Metal => Err(unavailable(device, "Metal exists only on Apple devices")),
        // CubeCL's CUDA runtime is compiled in only with the `cuda` feature (its build downloads LLVM).
        Device::Cuda(i) if cfg!(feature = "cuda") => {
            let name = format!("cuda:{i}");
            let cube = guarded(&name, || {
                cubecl::Device::cuda(i).map_err(|e| unavailable(device, e.to_string()))
            })?;
            let client = guarded(&name, || Ok(cube.client()))?;
            Ok((client, name))
        }
        Device::Cuda(_) => Err(Error::NoCuda {
            available: Device::available_list(),
        }),
        Device::Cpu => Err(unavailable(device, "the CPU runs no CubeCL kernels")),
    }
}

impl<'b> DeviceSession<'b> {
    /// Parses `blob` (16-byte aligned, as for `Model::parse`) and opens it on `device`. Fails if the
    /// device is not available (the message lists those that are) or if an op cannot run there (the
    /// message names the op).
    pub fn new(blob: &'b [u8], device: Device) -> Result<Self, Error> {
        let model = Model::parse(blob)?;
        let backend = match device {
            Device::Cpu => Backend::Cpu(Box::new(CpuBackend::new(model.clone())?)),
            _ => {
                let (client, name) = open_gpu(device)?;
                let gpu = guarded(&name, || GpuSession::new(&model, client, name.clone()))?;
                Backend::Gpu(Box::new(gpu))
            }
        };
        Ok(DeviceSession {
            device,
            backend,
            model,
        })
    }

    /// The device this session runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The device, described (`cpu`, `vulkan:0 (llvmpipe ...)`).
    pub fn device_name(&self) -> String {
        match &self.backend {
            Backend::Cpu(_) => "cpu".into(),
            Backend::Gpu(gpu) => gpu.device().to_string(),
        }
    }

    /// How many shape variants the blob has (1 without `ember convert --dim`).
    pub fn variant_count(&self) -> usize {
        match &self.backend {
            Backend::Cpu(cpu) => cpu.variants().0,
            Backend::Gpu(gpu) => gpu.variant_count(),
        }
    }

    /// The shape variant that runs (an index of `ember_core::Model::variant_dims`).
    pub fn variant(&self) -> usize {
        match &self.backend {
            Backend::Cpu(cpu) => cpu.variants().1,
            Backend::Gpu(gpu) => gpu.variant(),
        }
    }

    /// Runs shape variant `i` from now on, with no new device memory: every variant was lowered when
    /// the session opened, over the same weights and one activation buffer sized for the largest. Its
    /// inputs must be written (in its shapes) before it runs.
    pub fn set_variant(&mut self, i: usize) -> Result<(), Error> {
        match &mut self.backend {
            Backend::Cpu(cpu) => cpu.set_variant(i),
            Backend::Gpu(gpu) => gpu.set_variant(i),
        }
    }

    /// Runs the variant that takes graph inputs of these shapes (one per input, in order): the one
    /// with exactly these shapes, else the smallest that covers them where the model declares how to
    /// pad (`ember_core::Model::variant_covering`); `ember_core::Error::NoVariant` when none does.
    /// Inputs of another shape than the variant's are then written with [`DeviceInput::write_padded`].
    pub fn set_input_shapes(&mut self, shapes: &[&[u32]]) -> Result<ember_core::Fit, Error> {
        let fit = self
            .model
            .variant_covering(shapes)
            .ok_or(ember_core::Error::NoVariant {
                variants: self.variant_count(),
            })?;
        self.set_variant(fit.variant)?;
        Ok(fit)
    }

    /// The ops of the current variant that run on the host CPU inside this session, as `(op index,
    /// op name, why)`: a GPU session runs an op there when the device has no kernel for it or when it
    /// reads or writes a tensor type the device does not hold (int32/int64/bool activations: shape
    /// arithmetic, masks, ids). Empty on the CPU device, where every op is the host's.
    pub fn host_ops(&self) -> Vec<(usize, &'static str, String)> {
        match &self.backend {
            Backend::Cpu(_) => Vec::new(),
            Backend::Gpu(gpu) => gpu.host_ops(),
        }
    }

    /// Number of graph inputs.
    pub fn input_count(&self) -> usize {
        match &self.backend {
            Backend::Cpu(cpu) => cpu.view().inputs().len(),
            Backend::Gpu(gpu) => gpu.inputs().len(),
        }
    }

    /// Number of graph outputs.
    pub fn output_count(&self) -> usize {
        match &self.backend {
            Backend::Cpu(cpu) => cpu.view().outputs().len(),
            Backend::Gpu(gpu) => gpu.outputs().len(),
        }
    }

    fn io_dims(&self, input: bool, index: usize) -> Result<Vec<u32>, Error> {
        let no_such = |count| ember_core::Error::NoSuchTensor { index, count };
        match &self.backend {
            Backend::Cpu(cpu) => {
                let ids = if input {
                    cpu.view().inputs()
                } else {
                    cpu.view().outputs()
                };
                let id = *ids.get(index).ok_or(no_such(ids.len()))?;
                let t = cpu.view().tensor(id as usize).ok_or(no_such(ids.len()))?;
                Ok(t.dims.to_vec())
            }
            Backend::Gpu(gpu) => {
                let io = if input { gpu.inputs() } else { gpu.outputs() };
                Ok(io.get(index).ok_or(no_such(io.len()))?.dims.clone())
            }
        }
    }

    /// Graph input `index`, writable.
    pub fn input(&mut self, index: usize) -> Result<DeviceInput<'_, 'b>, Error> {
        let dims = self.io_dims(true, index)?;
        let len = dims.iter().map(|&d| d as usize).product();
        Ok(DeviceInput {
            session: self,
            index,
            dims,
            len,
        })
    }

    /// Graph output `index`, copied back (valid after `run`).
    pub fn output(&self, index: usize) -> Result<DeviceOutput, Error> {
        let dims = self.io_dims(false, index)?;
        let values = match &self.backend {
            Backend::Cpu(cpu) => cpu.read_output(index)?,
            Backend::Gpu(gpu) => gpu.read_output(index)?,
        };
        Ok(DeviceOutput { dims, values })
    }

    /// Runs every op once. On the CPU a run consumes its inputs (the planner reuses their bytes): write
    /// every input again before each run, as with `ember_core::Session`.
    pub fn run(&mut self) -> Result<(), Error> {
        match &mut self.backend {
            Backend::Cpu(cpu) => cpu.run(),
            Backend::Gpu(gpu) => gpu.run(),
        }
    }

    /// Runs every op once and times each. On a GPU the first run also compiles the kernels: profile a
    /// second run for steady-state times.
    pub fn run_profiled(&mut self) -> Result<Profile, Error> {
        match &mut self.backend {
            Backend::Cpu(cpu) => cpu.run_profiled(),
            Backend::Gpu(gpu) => gpu.run_profiled(),
        }
    }

    /// Where the session's memory went.
    pub fn memory_report(&self) -> DeviceMemoryReport {
        match &self.backend {
            Backend::Cpu(cpu) => DeviceMemoryReport::Cpu(cpu.memory_report()),
            Backend::Gpu(gpu) => DeviceMemoryReport::Gpu(gpu.memory_report()),
        }
    }
}
