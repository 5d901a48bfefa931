//! One kernel table per instruction-set level: `ember-core`'s reference table with the entries this
//! crate accelerates at that level replaced, and the scratch its kernels ask for.

use ember_core::{Kernels, OpKind};

use crate::Isa;

/// Scratch for the kernels of this crate: none yet.
fn scratch(_: &OpKind, _: &[&[usize]], _: &[usize], _: usize) -> usize {
    0
}

static SCALAR: Kernels = Kernels {
    name: "cpu-scalar",
    scratch: Some(scratch),
    ..ember_core::REFERENCE
};

static SSE2: Kernels = Kernels {
    name: "cpu-sse2",
    scratch: Some(scratch),
    ..ember_core::REFERENCE
};

static AVX2: Kernels = Kernels {
    name: "cpu-avx2",
    scratch: Some(scratch),
    ..ember_core::REFERENCE
};

static NEON: Kernels = Kernels {
    name: "cpu-neon",
    scratch: Some(scratch),
    ..ember_core::REFERENCE
};

static NEON_DOTPROD: Kernels = Kernels {
    name: "cpu-neon-dotprod",
    scratch: Some(scratch),
    ..ember_core::REFERENCE
};

/// The kernel table of `isa`. Its kernels use instructions of that level: open sessions with the table
/// of a level [`Isa::is_supported`] says this CPU runs ([`crate::kernels`] does).
pub fn table(isa: Isa) -> &'static Kernels {
    match isa {
        Isa::Scalar => &SCALAR,
        Isa::Sse2 => &SSE2,
        Isa::Avx2 => &AVX2,
        Isa::Neon => &NEON,
        Isa::NeonDotprod => &NEON_DOTPROD,
    }
}

/// The [`entry`](ember_core::kernels::entry) bits whose kernels `isa`'s table replaces (the others are `ember-core`'s reference
/// kernels).
pub fn accelerated(isa: Isa) -> u64 {
    let _ = isa;
    0
}

/// Which kernel runs `kind` at `isa`, in words, for `ember inspect` and profiles (`"reference"` where
/// the table keeps the reference kernel).
pub fn variant(isa: Isa, kind: &OpKind) -> &'static str {
    let _ = (isa, kind);
    "reference"
}
