//! # ember-cpu
//!
//! Kernels for application CPUs (x86-64, aarch64). For now this target accelerates no op: its table is
//! `ember-core`'s reference table under its own name, so that callers already select it by value
//! (`Session::with_kernels(&model, arena, &ember_cpu::KERNELS)`) and gain SIMD kernels as they land here,
//! each under `src/ops/<family>/<op>.rs` with the reference kernel's signature.
#![no_std]
#![forbid(unsafe_code)]

use ember_core::Kernels;

/// The CPU target's kernel table. Every entry is currently the reference kernel; `ACCELERATED` lists
/// the ops that are not.
pub static KERNELS: Kernels = Kernels {
    name: "cpu",
    ..ember_core::REFERENCE
};

/// Ops this target runs with its own kernels rather than the reference ones (none yet).
pub const ACCELERATED: &[&str] = &[];
