//! One kernel table per instruction-set level: `ember-core`'s reference table with the entries this
//! crate accelerates at that level replaced, and the scratch its kernels ask for.
//!
//! Accelerated at every level (portable `scalar` included): `conv2d`, `conv_transpose2d`,
//! `fully_connected`, `matmul` (see [`crate::gemm`] and `ops/nn/`). At the SIMD levels also the int8
//! convolution and fully connected (`ops/quant/`; AVX2, AVX-512 and NEON also the int8 Add of equal
//! shapes) and the element-wise, pooling, softmax, layer-norm,
//! reduction, recurrent-layer, resize and transpose kernels (`ops/`; the scalar table takes the few of these that beat
//! the reference). AVX-512's table is AVX2's with the GEMM-based entries at 16 lanes. The other
//! architecture's levels are never handed out; their tables are the scalar one.

use ember_core::kernels::entry;
use ember_core::ops::nn::{conv, conv_transpose, fully_connected, matmul, rnn as rnn_shapes};
use ember_core::{Kernels, OpKind};

use crate::level::Level;
use crate::ops::array::resize::resize;
use crate::ops::array::transpose::transpose;
use crate::ops::math::{binary, unary};
use crate::ops::nn::{layer_norm, reduce, rnn, softmax};
use crate::ops::pool::{avg_pool, global_avg_pool, max_pool};
use crate::ops::quant;
use crate::{ops, Isa};

/// The entries the GEMM-based kernels replace, at every level.
const GEMM_ENTRIES: u64 =
    entry::CONV2D | entry::CONV_TRANSPOSE2D | entry::FULLY_CONNECTED | entry::MATMUL;

/// Scratch bytes the f32 kernels of `level` ask for (0 for other ops and for shapes that fail the op's
/// `validate`).
fn f32_scratch(
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
            ops::nn::conv::Plan::new(level, p, x, w, output, workers).scratch_bytes()
        }
        OpKind::ConvTranspose2d(p) if conv_transpose::validate(p, x, w, bias, output).is_ok() => {
            ops::nn::conv_transpose::scratch_bytes(level, x, w, workers)
        }
        OpKind::FullyConnected(p) if fully_connected::validate(p, x, w, bias, output).is_ok() => {
            ops::nn::fully_connected::scratch_bytes(level, w, output)
        }
        OpKind::MatMul(p) if matmul::validate(p, x, w, output).is_ok() => {
            ops::nn::matmul::scratch_bytes(level, x, output)
        }
        // The scalar table runs the reference's recurrent kernel, which needs none.
        OpKind::Rnn(p)
            if level.isa != Isa::Scalar && rnn_shapes::validate(p, inputs, output).is_ok() =>
        {
            inputs
                .get(2)
                .map_or(0, |r| ops::nn::rnn::scratch_bytes(x, r))
        }
        _ => 0,
    }
}

/// A table's scratch function: the larger of what `$level`'s f32 kernels and `$int8`'s int8 kernels
/// ask for (one op runs one kernel, so they never need room at once).
macro_rules! scratch_fn {
    ($level:expr, $int8:expr) => {{
        fn scratch(kind: &OpKind, inputs: &[&[usize]], output: &[usize], workers: usize) -> usize {
            f32_scratch(&$level, kind, inputs, output, workers)
                .max(($int8.scratch)(kind, inputs, output, workers))
        }
        scratch
    }};
}

/// The table of a SIMD level: its element-wise, normalization and pooling kernels from the modules
/// named `$m` in each op's file, its GEMM-based entries (`ops::nn::$level`) and int8 entries
/// (`quant::$level`), and the scratch both ask for.
macro_rules! simd_table {
    ($name:literal, $m:ident, $level:ident) => {
        Kernels {
            name: $name,
            scratch: Some(scratch_fn!(crate::levels::$level, quant::$level)),
            conv2d: ops::nn::$level.conv2d,
            conv_transpose2d: ops::nn::$level.conv_transpose2d,
            fully_connected: ops::nn::$level.fully_connected,
            matmul: ops::nn::$level.matmul,
            quant_conv2d: quant::$level.conv2d,
            quant_fully_connected: quant::$level.fully_connected,
            binary: binary::$m::binary,
            unary: unary::$m::unary,
            softmax: softmax::$m::softmax,
            log_softmax: softmax::$m::log_softmax,
            layer_norm: layer_norm::$m::layer_norm,
            reduce: reduce::$m::reduce,
            rnn: rnn::$m::rnn,
            max_pool: max_pool::$m::max_pool,
            avg_pool: avg_pool::$m::avg_pool,
            global_avg_pool: global_avg_pool::$m::global_avg_pool,
            resize,
            transpose,
            ..ember_core::REFERENCE
        }
    };
}

/// The table of a level of the other architecture: the scalar one, under the level's name.
macro_rules! other_architecture {
    ($name:literal) => {
        Kernels {
            name: $name,
            ..SCALAR
        }
    };
}

static SCALAR: Kernels = Kernels {
    name: "cpu-scalar",
    scratch: Some(scratch_fn!(crate::levels::SCALAR, quant::NONE)),
    conv2d: ops::nn::SCALAR.conv2d,
    conv_transpose2d: ops::nn::SCALAR.conv_transpose2d,
    fully_connected: ops::nn::SCALAR.fully_connected,
    matmul: ops::nn::SCALAR.matmul,
    // Only where the portable kernels beat the reference (which the compiler vectorizes itself
    // where its loops are simple): see examples/elementwise_bench.rs.
    binary: binary::scalar::binary,
    reduce: reduce::scalar::reduce,
    resize,
    transpose,
    ..ember_core::REFERENCE
};

#[cfg(target_arch = "x86_64")]
static SSE2: Kernels = simd_table!("cpu-sse2", sse2, SSE2);

// With the int8 Add and Mul vectorized (`ops/quant/add.rs`, `mul.rs`).
#[cfg(target_arch = "x86_64")]
static AVX2: Kernels = Kernels {
    quant_add: quant::add::add_avx2,
    quant_mul: quant::mul::mul_avx2,
    ..simd_table!("cpu-avx2", avx2, AVX2)
};

// AVX2's kernels with the f32 GEMMs (convolutions, fully connected, matmul) in AVX-512 registers and
// the int8 GEMM tile on AVX-512 VNNI.
#[cfg(target_arch = "x86_64")]
static AVX512: Kernels = Kernels {
    name: "cpu-avx512",
    scratch: Some(scratch_fn!(*crate::levels::avx512(), quant::AVX512)),
    quant_conv2d: quant::AVX512.conv2d,
    quant_fully_connected: quant::AVX512.fully_connected,
    conv2d: ops::nn::AVX512.conv2d,
    conv_transpose2d: ops::nn::AVX512.conv_transpose2d,
    fully_connected: ops::nn::AVX512.fully_connected,
    matmul: ops::nn::AVX512.matmul,
    ..AVX2
};

// With the int8 Add of equal shapes vectorized (`ops/quant/add.rs`).
#[cfg(target_arch = "aarch64")]
static NEON: Kernels = Kernels {
    quant_add: quant::add::add_neon,
    ..simd_table!("cpu-neon", neon, NEON)
};

// The dot-product extension is for int8; the f32 kernels are NEON's.
#[cfg(target_arch = "aarch64")]
static NEON_DOTPROD: Kernels = Kernels {
    name: "cpu-neon-dotprod",
    scratch: Some(scratch_fn!(crate::levels::NEON, quant::NEON_DOTPROD)),
    quant_conv2d: quant::NEON_DOTPROD.conv2d,
    quant_fully_connected: quant::NEON_DOTPROD.fully_connected,
    ..NEON
};

// The other architecture's levels: never handed out (`Isa::is_supported` is false for them), defined so
// that `table` is total.
#[cfg(not(target_arch = "x86_64"))]
static SSE2: Kernels = other_architecture!("cpu-sse2");
#[cfg(not(target_arch = "x86_64"))]
static AVX2: Kernels = other_architecture!("cpu-avx2");
#[cfg(not(target_arch = "x86_64"))]
static AVX512: Kernels = other_architecture!("cpu-avx512");
#[cfg(not(target_arch = "aarch64"))]
static NEON: Kernels = other_architecture!("cpu-neon");
#[cfg(not(target_arch = "aarch64"))]
static NEON_DOTPROD: Kernels = other_architecture!("cpu-neon-dotprod");

/// The kernel table of `isa`. Its kernels use instructions of that level: open sessions with the table
/// of a level [`Isa::is_supported`] says this CPU runs ([`crate::kernels`] does); on another CPU its
/// accelerated ops fall back to the reference kernels.
pub fn table(isa: Isa) -> &'static Kernels {
    match isa {
        Isa::Scalar => &SCALAR,
        Isa::Sse2 => &SSE2,
        Isa::Avx2 => &AVX2,
        Isa::Avx512 => &AVX512,
        Isa::Neon => &NEON,
        Isa::NeonDotprod => &NEON_DOTPROD,
    }
}

/// Whether `isa` is a level of the architecture this crate was built for (the others' tables are the
/// scalar table).
fn native(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => true,
        Isa::Sse2 | Isa::Avx2 | Isa::Avx512 => cfg!(target_arch = "x86_64"),
        Isa::Neon | Isa::NeonDotprod => cfg!(target_arch = "aarch64"),
    }
}

/// The [`entry`] bits whose kernels `isa`'s table replaces (the others are `ember-core`'s reference
/// kernels).
pub fn accelerated(isa: Isa) -> u64 {
    let int8 = if native(isa) && isa != Isa::Scalar {
        let add = match isa {
            Isa::Sse2 => 0,
            Isa::Avx2 | Isa::Avx512 => entry::QUANT_ADD | entry::QUANT_MUL,
            _ => entry::QUANT_ADD,
        };
        entry::QUANT_CONV2D | entry::QUANT_FULLY_CONNECTED | add
    } else {
        0
    };
    ops::entries(isa) | GEMM_ENTRIES | int8
}

/// Which kernel runs `kind` at `isa`, in words, for `ember inspect` and profiles (`"reference"` where
/// the table keeps the reference kernel).
pub fn variant(isa: Isa, kind: &OpKind) -> &'static str {
    if let Some(name) = ops::variant(isa, kind) {
        return name;
    }
    let isa = if native(isa) { isa } else { Isa::Scalar };
    // [im2col + GEMM, depthwise or grouped, GEMM + col2im, fully connected, matmul]
    let f32_names: [&'static str; 5] = match isa {
        Isa::Scalar => [
            "scalar im2col|narrow",
            "scalar depthwise",
            "scalar gemm+col2im",
            "scalar gemv/gemm",
            "scalar gemm",
        ],
        Isa::Sse2 => [
            "sse2 im2col|narrow",
            "sse2 depthwise",
            "sse2 gemm+col2im",
            "sse2 gemv/gemm",
            "sse2 gemm",
        ],
        Isa::Avx2 => [
            "avx2 im2col|narrow",
            "avx2 depthwise",
            "avx2 gemm+col2im",
            "avx2 gemv/gemm",
            "avx2 gemm",
        ],
        Isa::Avx512 => [
            "avx512 im2col|narrow",
            "avx512 depthwise",
            "avx512 gemm+col2im",
            "avx512 gemv/gemm",
            "avx512 gemm",
        ],
        Isa::Neon | Isa::NeonDotprod => [
            "neon im2col|narrow",
            "neon depthwise",
            "neon gemm+col2im",
            "neon gemv/gemm",
            "neon gemm",
        ],
    };
    let int8 = match isa {
        Isa::Scalar => quant::NONE.names,
        Isa::Sse2 => quant::SSE2.names,
        Isa::Avx2 => quant::AVX2.names,
        Isa::Avx512 => quant::AVX512.names,
        Isa::Neon => quant::NEON.names,
        Isa::NeonDotprod => quant::NEON_DOTPROD.names,
    };
    match kind {
        OpKind::Conv2d(p) if p.groups == 1 => f32_names[0],
        OpKind::Conv2d(_) => f32_names[1],
        OpKind::ConvTranspose2d(_) => f32_names[2],
        OpKind::FullyConnected(_) => f32_names[3],
        OpKind::MatMul(_) => f32_names[4],
        OpKind::QuantConv2d(p) if p.groups > 1 => int8.1,
        OpKind::QuantConv2d(_) | OpKind::QuantFullyConnected(_) => int8.0,
        // Equal shapes and a repeating second operand vectorized; another broadcast runs the reference.
        OpKind::QuantAdd(_) if matches!(isa, Isa::Avx2 | Isa::Avx512) => "avx2-int8-add|reference",
        OpKind::QuantMul(_) if matches!(isa, Isa::Avx2 | Isa::Avx512) => "avx2-int8-mul|reference",
        OpKind::QuantAdd(_) if matches!(isa, Isa::Neon | Isa::NeonDotprod) => {
            "neon-int8-add|reference"
        }
        _ => "reference",
    }
}
