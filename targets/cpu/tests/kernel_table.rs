//! What each level's table accelerates: the entries `accelerated` names are this crate's kernels (not
//! the reference's), `variant` names them for profiles, and the ops they hand back to the reference
//! kernel are named "reference".

use ember_core::kernels::entry;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::ops::nn::reduce::{ReduceOp, ReduceParams};
use ember_core::{OpKind, REFERENCE};
use ember_cpu::{accelerated, table, variant, Isa};

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
            assert!(bits & bit != 0, "{isa}: entry {bit:#x} not reported");
            assert!(is_replaced, "{isa}: entry {bit:#x} is the reference kernel");
        }
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
        (Isa::Scalar, "scalar"),
        (Isa::Sse2, "sse2"),
        (Isa::Avx2, "avx2"),
        (Isa::Neon, "neon"),
        (Isa::NeonDotprod, "neon"),
    ] {
        assert_eq!(variant(isa, &add), name);
        assert_eq!(variant(isa, &mean(0b0110)), name);
        assert_eq!(variant(isa, &modulo), "reference");
        assert_eq!(variant(isa, &sin), "reference");
        assert_eq!(variant(isa, &mean(0b0101)), "reference");
        assert_eq!(variant(isa, &OpKind::GlobalAvgPool), name);
    }
}
