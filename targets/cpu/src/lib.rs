//! # ember-cpu
//!
//! Kernels for application CPUs (x86-64, aarch64): SIMD kernels for each instruction-set level
//! ([`Isa`]), chosen once when a session opens, with the scratch they need reserved in the session's
//! arena, and (with `std`) a pool of worker threads created once per session ([`ThreadPool`]).
//!
//! ```ignore
//! let cpu = ember_cpu::Cpu::new(1)?;                 // the best level this CPU runs, one thread
//! let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(&model)?);
//! let mut session = cpu.session(&model, arena.as_mut_bytes())?;
//! ```
//!
//! Without [`Cpu`], pick a table by value: `Session::with_options(&model, arena,
//! &SessionOptions::new(ember_cpu::table(Isa::best())))`. Each table is `ember-core`'s reference table
//! with the entries this crate accelerates replaced (see [`accelerated`]); kernels live under
//! `src/ops/<family>/<op>.rs` with the reference kernel's signature.
#![no_std]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(any(feature = "std", test))]
extern crate std;

mod gemm;
mod isa;
mod level;
mod levels;
mod ops;
mod par;
#[cfg(feature = "std")]
mod pool;
mod scratch;
mod simd;
mod tables;

pub use isa::{Isa, IsaError};
#[cfg(feature = "std")]
pub use pool::ThreadPool;
pub use tables::{accelerated, table, variant};

use ember_core::Kernels;

/// The kernel table a session gets on this CPU: [`table`] of [`Isa::detect`] (which honours
/// `EMBER_CPU_ISA` with `std`).
pub fn kernels() -> Result<&'static Kernels, IsaError> {
    Isa::detect().map(table)
}

#[cfg(feature = "std")]
mod cpu;
#[cfg(feature = "std")]
pub use cpu::{Cpu, CpuError};
