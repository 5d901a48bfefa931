//! `ember-core`'s whole f32 kernel suite (`core/tests/ops_f32.rs`: proptests against independently
//! written f64 definitions, known answers, `validate` edge cases) run on each of this crate's tables
//! that this CPU supports.
//!
//! The suite's files refer to their helpers as `crate::...`, so this test crate's root re-exports them:
//! `suite` is `ops_f32.rs` itself (its `kernel_suite!` macro and helpers, and its own run of the
//! reference table), and the check modules are included again at the root, where the macro looks for
//! them (hence `duplicate_mod`).
#![allow(clippy::duplicate_mod)]

#[path = "../../../core/tests/ops_f32.rs"]
#[macro_use]
#[allow(dead_code)]
mod suite;

#[path = "../../../core/tests/ops_f32/array.rs"]
mod array;
#[path = "../../../core/tests/ops_f32/conv.rs"]
mod conv;
#[path = "../../../core/tests/ops_f32/conv_transpose.rs"]
mod conv_transpose;
#[path = "../../../core/tests/ops_f32/indexing.rs"]
mod indexing;
#[path = "../../../core/tests/ops_f32/math.rs"]
mod math;
#[path = "../../../core/tests/ops_f32/nn.rs"]
mod nn;
#[path = "../../../core/tests/ops_f32/pool.rs"]
mod pool;
#[path = "../../../core/tests/ops_f32/reduce.rs"]
mod reduce;

pub use suite::*;

use ember_core::Kernels;
use ember_cpu::Isa;

/// The table of `isa`; where this CPU cannot run it, the scalar table, with a note on stderr (the
/// level's tests then check nothing of their own).
fn level(isa: Isa) -> &'static Kernels {
    if isa.is_supported() {
        ember_cpu::table(isa)
    } else {
        eprintln!("{isa} is not supported by this CPU: its suite runs the scalar table");
        ember_cpu::table(Isa::Scalar)
    }
}

kernel_suite!(cpu_scalar, crate::level(ember_cpu::Isa::Scalar));
#[cfg(target_arch = "x86_64")]
kernel_suite!(cpu_sse2, crate::level(ember_cpu::Isa::Sse2));
#[cfg(target_arch = "x86_64")]
kernel_suite!(cpu_avx2, crate::level(ember_cpu::Isa::Avx2));
#[cfg(target_arch = "aarch64")]
kernel_suite!(cpu_neon, crate::level(ember_cpu::Isa::Neon));
#[cfg(target_arch = "aarch64")]
kernel_suite!(cpu_neon_dotprod, crate::level(ember_cpu::Isa::NeonDotprod));
