//! [`Cpu`]: the kernel table of this CPU's level and a worker pool, set up once and shared by the
//! sessions opened with it.

use core::fmt;

use ember_core::{Error, Model, Session, SessionOptions};

use crate::{table, Isa, IsaError, ThreadPool};

/// This CPU, ready to open sessions: an instruction-set level and, for more than one thread, a pool of
/// workers created once.
pub struct Cpu {
    isa: Isa,
    pool: Option<ThreadPool>,
}

impl Cpu {
    /// The level [`Isa::detect`] finds (honouring `EMBER_CPU_ISA`) with `threads` workers in all (the
    /// calling thread included; 0 means one per core, 1 means no pool).
    pub fn new(threads: usize) -> Result<Cpu, CpuError> {
        let isa = Isa::detect().map_err(CpuError::Isa)?;
        Cpu::with_isa(isa, threads)
    }

    /// Level `isa` (which this CPU must support) with `threads` workers as for [`Cpu::new`].
    pub fn with_isa(isa: Isa, threads: usize) -> Result<Cpu, CpuError> {
        if !isa.is_supported() {
            return Err(CpuError::Isa(IsaError::Unsupported(isa)));
        }
        let pool = match threads {
            1 => None,
            n => Some(ThreadPool::new(n).map_err(CpuError::Threads)?),
        };
        Ok(Cpu { isa, pool })
    }

    /// The instruction-set level.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Workers in all (1 without a pool).
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, ember_core::Parallel::workers)
    }

    /// The options a session of this CPU opens with.
    pub fn options(&self) -> SessionOptions<'_> {
        SessionOptions {
            kernels: table(self.isa),
            parallel: self.pool.as_ref().map(|p| p as &dyn ember_core::Parallel),
        }
    }

    /// The arena bytes a session of `model` needs here: the converter's plan and the scratch this
    /// level's kernels ask for with this many workers.
    pub fn arena_bytes(&self, model: &Model<'_>) -> Result<usize, Error> {
        Session::arena_bytes_for(model, &self.options())
    }

    /// Opens a session of `model` over `arena` (at least [`Cpu::arena_bytes`]).
    pub fn session<'a>(
        &'a self,
        model: &'a Model<'a>,
        arena: &'a mut [u8],
    ) -> Result<Session<'a>, Error> {
        Session::with_options(model, arena, &self.options())
    }
}

/// Why a [`Cpu`] could not be set up.
#[derive(Debug)]
pub enum CpuError {
    /// The instruction-set level asked for cannot run here.
    Isa(IsaError),
    /// The worker threads could not be started.
    Threads(std::io::Error),
}

impl fmt::Display for CpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuError::Isa(e) => e.fmt(f),
            CpuError::Threads(e) => write!(f, "cannot start the worker threads: {e}"),
        }
    }
}

impl std::error::Error for CpuError {}
