//! What each level's table accelerates among the f32 element-wise, normalization, pooling and
//! transpose entries: the entries `accelerated` names are this crate's kernels (not the reference's),
//! `variant` names them for profiles, and the ops they hand back to the reference kernel are named
//! "reference".

use ember_core::kernels::entry;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::ops::nn::reduce::{ReduceOp, ReduceParams};
use ember_core::{OpKind, REFERENCE};
use ember_cpu::{accelerated, table, variant, Isa};

/// Whether `isa` is a SIMD level of the architecture the tests run on.
fn native_simd(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => false,
        Isa::Sse2 | Isa::Avx2 => cfg!(target_arch = "x86_64"),
        Isa::Neon | Isa::NeonDotprod => cfg!(target_arch = "aarch64"),
    }
}

#[test]
fn accelerated_entries_are_this_crates_kernels() {
    for isa in Isa::ALL {
        let (k, bits) = (table(isa), accelerated(isa));
        let replaced = [
            (
                entry::BINARY,
                k.binary as usize != REFERENCE.binary as usize,
            ),
            (entry::UNARY, k.unary as usize != REFERENCE.unary as usize),
            (
                entry::SOFTMAX,
                k.softmax as usize != REFERENCE.softmax as usize,
            ),
            (
                entry::LOG_SOFTMAX,
                k.log_softmax as usize != REFERENCE.log_softmax as usize,
            ),
            (
                entry::LAYER_NORM,
                k.layer_norm as usize != REFERENCE.layer_norm as usize,
            ),
            (
                entry::REDUCE,
                k.reduce as usize != REFERENCE.reduce as usize,
            ),
            (
                entry::MAX_POOL,
                k.max_pool as usize != REFERENCE.max_pool as usize,
            ),
            (
                entry::AVG_POOL,
                k.avg_pool as usize != REFERENCE.avg_pool as usize,
            ),
            (
                entry::GLOBAL_AVG_POOL,
                k.global_avg_pool as usize != REFERENCE.global_avg_pool as usize,
            ),
            (
                entry::TRANSPOSE,
                k.transpose as usize != REFERENCE.transpose as usize,
            ),
        ];
        for (bit, is_replaced) in replaced {
            assert_eq!(bits & bit != 0, is_replaced, "{isa}: entry {bit:#x}");
        }
        // This architecture's SIMD levels replace them all; the scalar table (and the other
        // architecture's levels, made of it) those where the portable kernels win. (Other entries,
        // such as the int8 ones, are not this test's.)
        let ours = replaced.iter().fold(0, |acc, (bit, _)| acc | bit);
        let expected = if !native_simd(isa) {
            entry::BINARY | entry::REDUCE | entry::TRANSPOSE
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
