//! `Device::Cpu`: `ember_core::Session` with `ember_cpu`'s kernels for this CPU (one thread) over an arena
//! the session owns.

use ember_core::format::{DType, Storage, ALIGN};
use ember_core::{AlignedBuf, MemoryReport, Model, Session, StdClock};

use crate::profile::{OpTiming, Profile, TimingSource};
use crate::Error;

pub(crate) struct CpuBackend<'b> {
    model: Model<'b>,
    /// The shape variant that runs, and the model's view of it (the model itself for its own).
    variant: usize,
    view: Model<'b>,
    cpu: ember_cpu::Cpu,
    arena: AlignedBuf,
    report: MemoryReport,
}

impl<'b> CpuBackend<'b> {
    pub(crate) fn new(model: Model<'b>) -> Result<Self, Error> {
        let cpu = ember_cpu::Cpu::new(1).map_err(|e| Error::Backend {
            device: "cpu".into(),
            reason: e.to_string(),
        })?;
        let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(&model)?);
        let report =
            Session::with_options(&model, arena.as_mut_bytes(), &cpu.options())?.memory_report();
        Ok(CpuBackend {
            variant: model.variant_index(),
            view: model.clone(),
            model,
            cpu,
            arena,
            report,
        })
    }

    /// The model as the current shape variant has it (its inputs' and outputs' shapes).
    pub(crate) fn view(&self) -> &Model<'b> {
        &self.view
    }

    /// The shape variants, and the one that runs.
    pub(crate) fn variants(&self) -> (usize, usize) {
        (self.model.variant_count(), self.variant)
    }

    /// Runs variant `i` from now on.
    pub(crate) fn set_variant(&mut self, i: usize) -> Result<(), Error> {
        self.view = self.model.variant(i)?;
        self.variant = i;
        Ok(())
    }

    /// A session over the owned arena, on the current variant; the arena keeps the bytes between calls.
    fn session(&mut self) -> Result<Session<'_>, Error> {
        let mut session =
            Session::with_options(&self.model, self.arena.as_mut_bytes(), &self.cpu.options())?;
        session.set_variant(self.variant)?;
        Ok(session)
    }

    /// Writes graph input `index`: f32 values, or for an int8 input their integer values (each must be
    /// an integer in -128..=127, as on the GPU).
    pub(crate) fn write_input(&mut self, index: usize, values: &[f32]) -> Result<(), Error> {
        let mut session = self.session()?;
        let mut input = session.input(index)?;
        if input.dtype() == DType::F32 {
            return Ok(input.write_f32(values)?);
        }
        if input.len() != values.len() {
            return Err(ember_core::Error::Shape {
                reason: "input length differs from the tensor's element count",
            }
            .into());
        }
        // Another type takes values of that type (an integer in range, 0 or 1 for bool), as on a GPU.
        let bytes =
            crate::gpu::host::from_f32(input.dtype(), values).map_err(|reason| Error::Backend {
                device: "cpu".into(),
                reason: format!("graph input {index}: {reason}"),
            })?;
        input.bytes_mut().copy_from_slice(&bytes);
        Ok(())
    }

    /// Graph output `index`, read from where the session's arena holds it (persistent region first,
    /// then the planned activations at the tensor's offset; the `AlignedBuf` needs no padding).
    pub(crate) fn read_output(&self, index: usize) -> Result<Vec<f32>, Error> {
        let outputs = self.view.outputs();
        let id = *outputs.get(index).ok_or(ember_core::Error::NoSuchTensor {
            index,
            count: outputs.len(),
        })?;
        let t = self
            .view
            .tensor(id as usize)
            .ok_or(ember_core::Error::BadMetadata {
                reason: "graph tensor id out of range",
            })?;
        let Storage::Arena { offset } = t.storage else {
            return Err(ember_core::Error::BadTensor {
                tensor: id,
                reason: "graph inputs and outputs must live in the arena",
            }
            .into());
        };
        let persistent = (self.view.plan().persistent_bytes as usize).div_ceil(ALIGN) * ALIGN;
        let len: usize = t.dims.iter().map(|&d| d as usize).product();
        let start = persistent + offset as usize;
        let size = t.dtype.size();
        let bytes = self.arena.as_bytes().get(start..start + size * len).ok_or(
            ember_core::Error::BadTensor {
                tensor: id,
                reason: "output runs past the arena",
            },
        )?;
        // Every type reads as its values in f32 (int8 as its integers), as on a GPU.
        Ok(crate::gpu::host::as_f32(t.dtype, bytes))
    }

    pub(crate) fn run(&mut self) -> Result<(), Error> {
        let mut session = self.session()?;
        session.run()?;
        let peak = session.memory_report().peak_bytes;
        self.report.peak_bytes = self.report.peak_bytes.max(peak);
        Ok(())
    }

    pub(crate) fn run_profiled(&mut self) -> Result<Profile, Error> {
        let clock = StdClock::default();
        let mut ops = Vec::new();
        let mut session = self.session()?;
        let start = std::time::Instant::now();
        session.run_profiled(&clock, &mut |e| {
            ops.push(OpTiming {
                index: e.index,
                op: e.op,
                kernels: e.kernels,
                nanos: e.ticks,
            })
        })?;
        let total_nanos = start.elapsed().as_nanos() as u64;
        let peak = session.memory_report().peak_bytes;
        self.report.peak_bytes = self.report.peak_bytes.max(peak);
        Ok(Profile {
            source: TimingSource::HostClock,
            total_nanos,
            ops,
        })
    }

    pub(crate) fn memory_report(&self) -> MemoryReport {
        self.report
    }
}
