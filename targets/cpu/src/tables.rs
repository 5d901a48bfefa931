//! One kernel table per instruction-set level: `ember-core`'s reference table with the entries this
//! crate accelerates at that level replaced, and the scratch its kernels ask for.
//!
//! Accelerated at every level of this architecture (portable `scalar` included): `conv2d`,
//! `conv_transpose2d`, `fully_connected`, `matmul` (see [`crate::gemm`] and `ops/nn/`). The tables of
//! the other architecture's levels stay the reference table.

use ember_core::kernels::entry;
use ember_core::ops::nn::{conv, conv_transpose, fully_connected, matmul};
use ember_core::{Kernels, OpKind};

use crate::level::Level;
use crate::ops::nn as ops;
use crate::Isa;

/// The entries replaced in the tables of this architecture's levels.
const ACCELERATED: u64 =
    entry::CONV2D | entry::CONV_TRANSPOSE2D | entry::FULLY_CONNECTED | entry::MATMUL;

/// Scratch bytes the kernels of `level` ask for (0 for shapes that fail the op's `validate`).
fn scratch(
    level: &'static Level,
    kind: &OpKind,
    inputs: &[&[usize]],
    output: &[usize],
    workers: usize,
) -> usize {
    let (Some(&x), Some(&w)) = (inputs.first(), inputs.get(1)) else {
        return 0;
    };
    let bias = inputs.get(2).copied();
    match kind {
        OpKind::Conv2d(p) if conv::validate(p, x, w, bias, output).is_ok() => {
            ops::conv::scratch_bytes(level, p, x, w, output, workers)
        }
        OpKind::ConvTranspose2d(p) if conv_transpose::validate(p, x, w, bias, output).is_ok() => {
            ops::conv_transpose::scratch_bytes(level, x, w, workers)
        }
        OpKind::FullyConnected(p) if fully_connected::validate(p, x, w, bias, output).is_ok() => {
            ops::fully_connected::scratch_bytes(level, w, output)
        }
        OpKind::MatMul(p) if matmul::validate(p, x, w, output).is_ok() => {
            ops::matmul::scratch_bytes(level, x, output)
        }
        _ => 0,
    }
}

/// A table for `$level` (a `static Level`) whose entries are in module `crate::ops::$entries`.
macro_rules! table {
    ($name:literal, $level:path, $entries:ident) => {{
        fn scratch(kind: &OpKind, inputs: &[&[usize]], output: &[usize], workers: usize) -> usize {
            self::scratch(&$level, kind, inputs, output, workers)
        }
        Kernels {
            name: $name,
            scratch: Some(scratch),
            conv2d: crate::ops::$entries::conv2d,
            conv_transpose2d: crate::ops::$entries::conv_transpose2d,
            fully_connected: crate::ops::$entries::fully_connected,
            matmul: crate::ops::$entries::matmul,
            ..ember_core::REFERENCE
        }
    }};
}

/// The reference table under another name (a level of the other architecture).
macro_rules! reference {
    ($name:literal) => {
        Kernels {
            name: $name,
            scratch: None,
            ..ember_core::REFERENCE
        }
    };
}

static SCALAR: Kernels = table!("cpu-scalar", crate::level::SCALAR, scalar);

#[cfg(target_arch = "x86_64")]
static SSE2: Kernels = table!("cpu-sse2", crate::level::SSE2, sse2);
#[cfg(not(target_arch = "x86_64"))]
static SSE2: Kernels = reference!("cpu-sse2");

#[cfg(target_arch = "x86_64")]
static AVX2: Kernels = table!("cpu-avx2", crate::level::AVX2, avx2);
#[cfg(not(target_arch = "x86_64"))]
static AVX2: Kernels = reference!("cpu-avx2");

#[cfg(target_arch = "aarch64")]
static NEON: Kernels = table!("cpu-neon", crate::level::NEON, neon);
#[cfg(not(target_arch = "aarch64"))]
static NEON: Kernels = reference!("cpu-neon");

// The dot-product extension is for int8; its f32 kernels are NEON's.
#[cfg(target_arch = "aarch64")]
static NEON_DOTPROD: Kernels = table!("cpu-neon-dotprod", crate::level::NEON, neon);
#[cfg(not(target_arch = "aarch64"))]
static NEON_DOTPROD: Kernels = reference!("cpu-neon-dotprod");

/// The kernel table of `isa`. Its kernels use instructions of that level: open sessions with the table
/// of a level [`Isa::is_supported`] says this CPU runs ([`crate::kernels`] does); on another CPU its
/// accelerated ops fall back to the reference kernels.
pub fn table(isa: Isa) -> &'static Kernels {
    match isa {
        Isa::Scalar => &SCALAR,
        Isa::Sse2 => &SSE2,
        Isa::Avx2 => &AVX2,
        Isa::Neon => &NEON,
        Isa::NeonDotprod => &NEON_DOTPROD,
    }
}

/// Whether `isa` is a level of the architecture this crate was built for (its table has this crate's
/// kernels).
fn native(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => true,
        Isa::Sse2 | Isa::Avx2 => cfg!(target_arch = "x86_64"),
        Isa::Neon | Isa::NeonDotprod => cfg!(target_arch = "aarch64"),
    }
}

/// The [`entry`](ember_core::kernels::entry) bits whose kernels `isa`'s table replaces (the others are
/// `ember-core`'s reference kernels).
pub fn accelerated(isa: Isa) -> u64 {
    if native(isa) {
        ACCELERATED
    } else {
        0
    }
}

/// Which kernel runs `kind` at `isa`, in words, for `ember inspect` and profiles (`"reference"` where
/// the table keeps the reference kernel).
pub fn variant(isa: Isa, kind: &OpKind) -> &'static str {
    if !native(isa) {
        return "reference";
    }
    // [im2col + GEMM, depthwise or grouped, GEMM + col2im, fully connected, matmul]
    let names: [&'static str; 5] = match isa {
        Isa::Scalar => [
            "scalar im2col+gemm",
            "scalar depthwise",
            "scalar gemm+col2im",
            "scalar gemv/gemm",
            "scalar gemm",
        ],
        Isa::Sse2 => [
            "sse2 im2col+gemm",
            "sse2 depthwise",
            "sse2 gemm+col2im",
            "sse2 gemv/gemm",
            "sse2 gemm",
        ],
        Isa::Avx2 => [
            "avx2 im2col+gemm",
            "avx2 depthwise",
            "avx2 gemm+col2im",
            "avx2 gemv/gemm",
            "avx2 gemm",
        ],
        Isa::Neon | Isa::NeonDotprod => [
            "neon im2col+gemm",
            "neon depthwise",
            "neon gemm+col2im",
            "neon gemv/gemm",
            "neon gemm",
        ],
    };
    match kind {
        OpKind::Conv2d(p) if p.groups == 1 => names[0],
        OpKind::Conv2d(_) => names[1],
        OpKind::ConvTranspose2d(_) => names[2],
        OpKind::FullyConnected(_) => names[3],
        OpKind::MatMul(_) => names[4],
        _ => "reference",
    }
}
