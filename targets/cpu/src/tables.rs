//! One kernel table per instruction-set level: `ember-core`'s reference table with the entries this
//! crate accelerates at that level replaced, and the scratch its kernels ask for.

use ember_core::kernels::entry;
use ember_core::{Kernels, OpKind};

use crate::ops::array::transpose::transpose;
use crate::ops::math::{binary, unary};
use crate::ops::nn::{layer_norm, reduce, softmax};
use crate::ops::pool::{avg_pool, global_avg_pool, max_pool};
use crate::ops::quant;
use crate::{ops, Isa};

/// Scratch for the f32 kernels of this crate: none (the int8 ones ask through their level's
/// `quant::Entries::scratch`, which adds this).
pub(crate) fn scratch(_: &OpKind, _: &[&[usize]], _: &[usize], _: usize) -> usize {
    0
}

static SCALAR: Kernels = Kernels {
    name: "cpu-scalar",
    scratch: Some(scratch),
    // Only where the portable kernels beat the reference (which the compiler vectorizes itself
    // where its loops are simple): see examples/elementwise_bench.rs.
    binary: binary::scalar::binary,
    reduce: reduce::scalar::reduce,
    transpose,
    ..ember_core::REFERENCE
};

#[cfg(target_arch = "x86_64")]
static SSE2: Kernels = Kernels {
    name: "cpu-sse2",
    scratch: Some(quant::SSE2.scratch),
    quant_conv2d: quant::SSE2.conv2d,
    quant_fully_connected: quant::SSE2.fully_connected,
    binary: binary::sse2::binary,
    unary: unary::sse2::unary,
    softmax: softmax::sse2::softmax,
    log_softmax: softmax::sse2::log_softmax,
    layer_norm: layer_norm::sse2::layer_norm,
    reduce: reduce::sse2::reduce,
    max_pool: max_pool::sse2::max_pool,
    avg_pool: avg_pool::sse2::avg_pool,
    global_avg_pool: global_avg_pool::sse2::global_avg_pool,
    transpose,
    ..ember_core::REFERENCE
};

#[cfg(target_arch = "x86_64")]
static AVX2: Kernels = Kernels {
    name: "cpu-avx2",
    scratch: Some(quant::AVX2.scratch),
    quant_conv2d: quant::AVX2.conv2d,
    quant_fully_connected: quant::AVX2.fully_connected,
    binary: binary::avx2::binary,
    unary: unary::avx2::unary,
    softmax: softmax::avx2::softmax,
    log_softmax: softmax::avx2::log_softmax,
    layer_norm: layer_norm::avx2::layer_norm,
    reduce: reduce::avx2::reduce,
    max_pool: max_pool::avx2::max_pool,
    avg_pool: avg_pool::avx2::avg_pool,
    global_avg_pool: global_avg_pool::avx2::global_avg_pool,
    transpose,
    ..ember_core::REFERENCE
};

#[cfg(target_arch = "aarch64")]
static NEON: Kernels = Kernels {
    name: "cpu-neon",
    scratch: Some(quant::NEON.scratch),
    quant_conv2d: quant::NEON.conv2d,
    quant_fully_connected: quant::NEON.fully_connected,
    binary: binary::neon::binary,
    unary: unary::neon::unary,
    softmax: softmax::neon::softmax,
    log_softmax: softmax::neon::log_softmax,
    layer_norm: layer_norm::neon::layer_norm,
    reduce: reduce::neon::reduce,
    max_pool: max_pool::neon::max_pool,
    avg_pool: avg_pool::neon::avg_pool,
    global_avg_pool: global_avg_pool::neon::global_avg_pool,
    transpose,
    ..ember_core::REFERENCE
};

#[cfg(target_arch = "aarch64")]
static NEON_DOTPROD: Kernels = Kernels {
    name: "cpu-neon-dotprod",
    scratch: Some(quant::NEON_DOTPROD.scratch),
    quant_conv2d: quant::NEON_DOTPROD.conv2d,
    quant_fully_connected: quant::NEON_DOTPROD.fully_connected,
    binary: binary::neon::binary,
    unary: unary::neon::unary,
    softmax: softmax::neon::softmax,
    log_softmax: softmax::neon::log_softmax,
    layer_norm: layer_norm::neon::layer_norm,
    reduce: reduce::neon::reduce,
    max_pool: max_pool::neon::max_pool,
    avg_pool: avg_pool::neon::avg_pool,
    global_avg_pool: global_avg_pool::neon::global_avg_pool,
    transpose,
    ..ember_core::REFERENCE
};

// The other architecture's levels: never handed out (`Isa::is_supported` is false for them), defined so
// that `table` is total.
#[cfg(not(target_arch = "x86_64"))]
static SSE2: Kernels = Kernels {
    name: "cpu-sse2",
    ..SCALAR
};
#[cfg(not(target_arch = "x86_64"))]
static AVX2: Kernels = Kernels {
    name: "cpu-avx2",
    ..SCALAR
};
#[cfg(not(target_arch = "aarch64"))]
static NEON: Kernels = Kernels {
    name: "cpu-neon",
    ..SCALAR
};
#[cfg(not(target_arch = "aarch64"))]
static NEON_DOTPROD: Kernels = Kernels {
    name: "cpu-neon-dotprod",
    ..SCALAR
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

/// The [`entry`] bits whose kernels `isa`'s table replaces (the others are `ember-core`'s reference
/// kernels).
pub fn accelerated(isa: Isa) -> u64 {
    let int8 = entry::QUANT_CONV2D | entry::QUANT_FULLY_CONNECTED;
    let int8 = match isa {
        Isa::Sse2 | Isa::Avx2 if cfg!(target_arch = "x86_64") => int8,
        Isa::Neon | Isa::NeonDotprod if cfg!(target_arch = "aarch64") => int8,
        _ => 0,
    };
    ops::entries(isa) | int8
}

/// Which kernel runs `kind` at `isa`, in words, for `ember inspect` and profiles (`"reference"` where
/// the table keeps the reference kernel).
pub fn variant(isa: Isa, kind: &OpKind) -> &'static str {
    if let Some(name) = ops::variant(isa, kind) {
        return name;
    }
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
