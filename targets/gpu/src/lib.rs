//! # ember-gpu
//!
//! Ember on GPUs through [CubeCL](https://github.com/tracel-ai/cubecl): the same `.ember` blob that runs
//! on a Cortex-M runs here on a device picked at run time by a value.
//!
//! ```no_run
//! # fn main() -> Result<(), ember_gpu::Error> {
//! # let blob: &[u8] = &[];
//! use ember_gpu::{Device, DeviceSession};
//! let device = Device::Vulkan(0); // or Device::Cpu, Device::best(), "vulkan".parse()?
//! let mut session = DeviceSession::new(blob, device)?;
//! session.input(0)?.write_f32(&[0.0; 64])?;
//! session.run()?;
//! let scores = session.output(0)?.into_vec();
//! println!("{}", session.memory_report());
//! # Ok(()) }
//! ```
//!
//! No public type carries a backend or device type parameter: [`DeviceSession`] is an enum inside.
//! `Device::Cpu` runs `ember_core::Session` with `ember_cpu`'s kernels for this CPU; the GPU devices run this crate's
//! `#[cube]` kernels (the f32 and int8 op sets, `src/kernels/`) on CubeCL's wgpu runtime with its SPIR-V compiler
//! (Vulkan) or, on Apple devices, Metal. Each op is lowered once per session (`src/gpu/lower.rs`):
//! shapes and strides go into small tables, and the data-movement ops (transpose, slice, pad,
//! broadcast, concat, gather, nearest resize) become one gather through an index map that the
//! reference kernel itself computes on the host. Weights are uploaded once per session; activations share one
//! CubeCL-managed buffer, placed by their lifetimes. The int8 kernels (`src/kernels/quant.rs`) compute with the CPU reference's
//! integer arithmetic, both requantization roundings included, so int8 results are the same bytes on
//! every device. A model with an op or dtype the GPU lacks fails to open there with an error naming
//! the op.

mod cpu;
mod device;
mod error;
mod gpu;
mod kernels;
mod profile;
mod session;

pub use device::{vulkan_devices, Device, VulkanDeviceInfo, VulkanHeap};
pub use error::Error;
pub use gpu::GpuMemoryReport;
pub use profile::{OpTiming, Profile, TimingSource};
pub use session::{DeviceInput, DeviceMemoryReport, DeviceOutput, DeviceSession};
