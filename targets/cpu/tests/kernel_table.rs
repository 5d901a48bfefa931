//! What each level's table accelerates among the f32 element-wise, normalization, pooling and
//! transpose entries: the entries `accelerated` names are this crate's kernels (not the reference's),
//! `variant` names them for profiles, and the ops they hand back to the reference kernel are named
//! "reference". Also: every table differs from the reference in exactly the entries `accelerated` names
//! (compared as function pointers, every field of `Kernels`: `Kernels::replaced`), and the GEMM-based
//! entries are named by level.

use ember_core::kernels::entry;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::ops::nn::fully_connected::FullyConnectedParams;
use ember_core::ops::nn::reduce::{ReduceOp, ReduceParams};
use ember_core::{Kernels, OpKind, REFERENCE};
use ember_cpu::{accelerated, table, variant, Isa};
use ember_testkit::layer::conv2d_params;

/// Whether `isa` is a SIMD level of the architecture the tests run on.
fn native_simd(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => false,
        Isa::Sse2 | Isa::Avx2 | Isa::Avx512 => cfg!(target_arch = "x86_64"),
        Isa::Neon | Isa::NeonDotprod => cfg!(target_arch = "aarch64"),
    }
}

/// `(entry bit, whether table k's entry is not the reference's)` for each `field => BIT`.
macro_rules! replaced {
    ($k:expr, $($field:ident => $bit:ident),* $(,)?) => {
        [$((entry::$bit, $k.$field as usize != REFERENCE.$field as usize)),*]
    };
}

#[test]
fn accelerated_entries_are_this_crates_kernels() {
    for isa in Isa::ALL {
        let (k, bits) = (table(isa), accelerated(isa));
        let replaced = replaced!(
            k,
            binary => BINARY,
            unary => UNARY,
            softmax => SOFTMAX,
            log_softmax => LOG_SOFTMAX,
            layer_norm => LAYER_NORM,
            reduce => REDUCE,
            max_pool => MAX_POOL,
            avg_pool => AVG_POOL,
            global_avg_pool => GLOBAL_AVG_POOL,
            resize => RESIZE,
            transpose => TRANSPOSE,
        );
        for (bit, is_replaced) in replaced {
            assert_eq!(bits & bit != 0, is_replaced, "{isa}: entry {bit:#x}");
        }
        // This architecture's SIMD levels replace them all; the scalar table (and the other
        // architecture's levels, made of it) those where the portable kernels win. (Other entries,
        // such as the int8 ones, are not this test's.)
        let ours = replaced.iter().fold(0, |acc, (bit, _)| acc | bit);
        let expected = if !native_simd(isa) {
            entry::BINARY | entry::REDUCE | entry::RESIZE | entry::TRANSPOSE
        } else {
            ours
        };
        assert_eq!(bits & ours, expected, "{isa}");
    }
}

#[test]
fn variants_name_the_level_or_the_reference() {
    let add = OpKind::Binary(BinaryParams {
        op: BinaryOp::Add,
        act: Activation::None,
    });
    let modulo = OpKind::Binary(BinaryParams {
        op: BinaryOp::Mod,
        act: Activation::None,
    });
    let sin = OpKind::Unary(UnaryParams { op: UnaryOp::Sin });
    let mean = |axes| {
        OpKind::Reduce(ReduceParams {
            op: ReduceOp::Mean,
            axes,
            keepdims: true,
        })
    };
    for (isa, name) in [
        (Isa::Sse2, "sse2"),
        (Isa::Avx2, "avx2"),
        // AVX-512's table keeps AVX2's element-wise kernels.
        (Isa::Avx512, "avx2"),
        (Isa::Neon, "neon"),
        (Isa::NeonDotprod, "neon"),
    ] {
        let name = if native_simd(isa) { name } else { "scalar" };
        let pooled = if native_simd(isa) { name } else { "reference" };
        assert_eq!(variant(isa, &add), name);
        assert_eq!(variant(isa, &mean(0b0110)), name);
        assert_eq!(variant(isa, &modulo), "reference");
        assert_eq!(variant(isa, &sin), "reference");
        assert_eq!(variant(isa, &mean(0b0101)), "reference");
        assert_eq!(variant(isa, &OpKind::GlobalAvgPool), pooled);
    }
    assert_eq!(variant(Isa::Scalar, &add), "scalar");
    assert_eq!(variant(Isa::Scalar, &mean(0b0110)), "scalar");
    assert_eq!(variant(Isa::Scalar, &sin), "reference");
    assert_eq!(variant(Isa::Scalar, &OpKind::GlobalAvgPool), "reference");
}

/// The entry bits of `k` whose function pointers differ from the reference table's (every field of
/// `Kernels`, generated with the table from the declaration of the op set).
fn differing(k: &Kernels) -> u64 {
    k.replaced(&REFERENCE)
}

#[test]
fn accelerated_entries_are_exactly_the_replaced_ones() {
    let gemm = entry::CONV2D | entry::CONV_TRANSPOSE2D | entry::FULLY_CONNECTED | entry::MATMUL;
    // Core's generic reference kernels (`concat::<f32>` and the like) are instantiated anew in each
    // crate that names them when generics are not shared (an optimized build): there, this crate's
    // table and this test's `REFERENCE` hold two copies of the same function, so their pointers are
    // compared only in builds that share generics (`debug_assertions`, and CI's `qemu` profile).
    let generic = entry::CONCAT | entry::RESHAPE | entry::SLICE | entry::GATHER | entry::BROADCAST;
    let comparable = if cfg!(debug_assertions) { !0 } else { !generic };
    for isa in Isa::ALL {
        assert_eq!(
            differing(table(isa)) & comparable,
            accelerated(isa) & comparable,
            "{isa}"
        );
        assert_eq!(table(isa).entries, REFERENCE.entries, "{isa}");
        // The GEMM-based kernels are portable (the scalar table has them too, and the other
        // architecture's tables are the scalar one).
        assert_eq!(accelerated(isa) & gemm, gemm, "{isa}");
        let int8 = entry::QUANT_CONV2D | entry::QUANT_FULLY_CONNECTED;
        let simd = native_simd(isa);
        assert_eq!(
            accelerated(isa) & int8,
            if simd { int8 } else { 0 },
            "{isa}"
        );
    }
}

#[test]
fn variant_names_the_kernel_that_runs() {
    let conv = |groups| {
        OpKind::Conv2d(conv2d_params(
            (1, 1),
            (1, 1),
            [0; 4],
            groups,
            Activation::None,
        ))
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
        assert_eq!(variant(isa, &conv(1)), format!("{level} im2col|narrow"));
        assert_eq!(variant(isa, &conv(8)), format!("{level} depthwise"));
        assert_eq!(variant(isa, &fc), format!("{level} gemv/gemm"));
        assert_eq!(variant(isa, &OpKind::Where), "reference");
    }
}
