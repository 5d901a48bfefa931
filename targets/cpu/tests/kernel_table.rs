//! Each table replaces exactly the entries [`ember_cpu::accelerated`] names, every other entry is the
//! reference kernel (compared as function pointers), and `variant` names a kernel for exactly those. The
//! destructuring below names every field of `Kernels`, so a new op in the table fails to compile here
//! until this list (and the decision for it) is updated.

use ember_core::kernels::entry;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::conv::Conv2dParams;
use ember_core::ops::nn::fully_connected::FullyConnectedParams;
use ember_core::{Kernels, OpKind, REFERENCE};
use ember_cpu::{accelerated, table, variant, Isa};

/// The entry bits of two tables whose function pointers differ.
macro_rules! differing_entries {
    ($a:expr, $b:expr; $($field:ident => $bit:ident),* $(,)?) => {{
        // Exhaustive: every field of `Kernels` must be listed.
        let Kernels { name: _, entries: _, scratch: _, $($field: _),* } = *$a;
        let mut bits = 0u64;
        $(
            if $a.$field as usize != $b.$field as usize {
                bits |= entry::$bit;
            }
        )*
        bits
    }};
}

fn differing(k: &Kernels) -> u64 {
    differing_entries!(k, REFERENCE;
        movement8 => MOVEMENT8, movement16 => MOVEMENT16, movement32 => MOVEMENT32,
        movement64 => MOVEMENT64, conv2d => CONV2D, conv_transpose2d => CONV_TRANSPOSE2D,
        fully_connected => FULLY_CONNECTED, matmul => MATMUL, binary => BINARY, unary => UNARY,
        softmax => SOFTMAX, max_pool => MAX_POOL, avg_pool => AVG_POOL,
        global_avg_pool => GLOBAL_AVG_POOL, concat => CONCAT, transpose => TRANSPOSE, pad => PAD,
        reshape => RESHAPE, log_softmax => LOG_SOFTMAX, reduce => REDUCE, layer_norm => LAYER_NORM,
        slice => SLICE, gather => GATHER, broadcast => BROADCAST, resize => RESIZE,
        binary_any => BINARY_ANY, unary_any => UNARY_ANY, compare => COMPARE, logical => LOGICAL,
        not => NOT, where_select => WHERE_SELECT, cast => CAST, arg_reduce => ARG_REDUCE,
        quant_conv2d => QUANT_CONV2D, quant_fully_connected => QUANT_FULLY_CONNECTED,
        quant_add => QUANT_ADD, quant_mul => QUANT_MUL, quant_avg_pool => QUANT_AVG_POOL,
        quant_max_pool => QUANT_MAX_POOL, quant_softmax => QUANT_SOFTMAX, quantize => QUANTIZE,
        dequantize => DEQUANTIZE, requantize => REQUANTIZE,
    )
}

#[test]
fn accelerated_entries_are_exactly_the_replaced_ones() {
    let gemm = entry::CONV2D | entry::CONV_TRANSPOSE2D | entry::FULLY_CONNECTED | entry::MATMUL;
    for isa in Isa::ALL {
        assert_eq!(differing(table(isa)), accelerated(isa), "{isa}");
        assert_eq!(table(isa).entries, REFERENCE.entries, "{isa}");
        let native = match isa {
            Isa::Scalar => true,
            Isa::Sse2 | Isa::Avx2 => cfg!(target_arch = "x86_64"),
            Isa::Neon | Isa::NeonDotprod => cfg!(target_arch = "aarch64"),
        };
        assert_eq!(accelerated(isa), if native { gemm } else { 0 }, "{isa}");
    }
}

#[test]
fn variant_names_the_kernel_that_runs() {
    let conv = |groups| {
        OpKind::Conv2d(Conv2dParams {
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 0,
            pad_left: 0,
            pad_bottom: 0,
            pad_right: 0,
            groups,
            act: Activation::None,
        })
    };
    let fc = OpKind::FullyConnected(FullyConnectedParams {
        act: Activation::None,
    });
    for isa in Isa::supported() {
        // The dot-product level runs NEON's f32 kernels.
        let level = match isa {
            Isa::NeonDotprod => "neon",
            _ => isa.name(),
        };
        assert_eq!(variant(isa, &conv(1)), format!("{level} im2col+gemm"));
        assert_eq!(variant(isa, &conv(8)), format!("{level} depthwise"));
        assert_eq!(variant(isa, &fc), format!("{level} gemv/gemm"));
        assert_eq!(variant(isa, &OpKind::GlobalAvgPool), "reference");
    }
}
