//! One kernel table per instruction-set level: `ember-core`'s reference table with the entries this
//! crate accelerates at that level replaced, and the scratch its kernels ask for.

use ember_core::kernels::entry;
use ember_core::{Kernels, OpKind};

use crate::ops::quant;
use crate::Isa;

/// Scratch for the kernels of this crate: none yet (the int8 ones ask through their level's
/// `quant::Entries::scratch`, which adds this).
pub(crate) fn scratch(_: &OpKind, _: &[&[usize]], _: &[usize], _: usize) -> usize {
    0
}

static SCALAR: Kernels = Kernels {
    name: "cpu-scalar",
    scratch: Some(scratch),
    ..ember_core::REFERENCE
};

static SSE2: Kernels = Kernels {
    name: "cpu-sse2",
    scratch: Some(quant::SSE2.scratch),
    quant_conv2d: quant::SSE2.conv2d,
    quant_fully_connected: quant::SSE2.fully_connected,
    ..ember_core::REFERENCE
};

static AVX2: Kernels = Kernels {
    name: "cpu-avx2",
    scratch: Some(quant::AVX2.scratch),
    quant_conv2d: quant::AVX2.conv2d,
    quant_fully_connected: quant::AVX2.fully_connected,
    ..ember_core::REFERENCE
};

static NEON: Kernels = Kernels {
    name: "cpu-neon",
    scratch: Some(quant::NEON.scratch),
    quant_conv2d: quant::NEON.conv2d,
    quant_fully_connected: quant::NEON.fully_connected,
    ..ember_core::REFERENCE
};

static NEON_DOTPROD: Kernels = Kernels {
    name: "cpu-neon-dotprod",
    scratch: Some(quant::NEON_DOTPROD.scratch),
    quant_conv2d: quant::NEON_DOTPROD.conv2d,
    quant_fully_connected: quant::NEON_DOTPROD.fully_connected,
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
    let int8 = entry::QUANT_CONV2D | entry::QUANT_FULLY_CONNECTED;
    match isa {
        Isa::Sse2 | Isa::Avx2 if cfg!(target_arch = "x86_64") => int8,
        Isa::Neon | Isa::NeonDotprod if cfg!(target_arch = "aarch64") => int8,
        _ => 0,
    }
}

/// Which kernel runs `kind` at `isa`, in words, for `ember inspect` and profiles (`"reference"` where
/// the table keeps the reference kernel).
pub fn variant(isa: Isa, kind: &OpKind) -> &'static str {
    let int8 = match isa {
        Isa::Scalar => return "reference",
        Isa::Sse2 => quant::SSE2.names,
        Isa::Avx2 => quant::AVX2.names,
        Isa::Neon => quant::NEON.names,
        Isa::NeonDotprod => quant::NEON_DOTPROD.names,
    };
    match kind {
        OpKind::QuantConv2d(p) if p.groups > 1 => int8.1,
        OpKind::QuantConv2d(_) | OpKind::QuantFullyConnected(_) => int8.0,
        _ => "reference",
    }
}
