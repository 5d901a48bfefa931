//! The IR's element-wise and matrix math ops ([`Op::Binary`](super::Op::Binary),
//! [`Op::Unary`](super::Op::Unary), [`Op::Compare`](super::Op::Compare),
//! [`Op::Logical`](super::Op::Logical), [`Op::Not`](super::Op::Not), [`Op::Where`](super::Op::Where),
//! [`Op::Cast`](super::Op::Cast), [`Op::MatMul`](super::Op::MatMul)): their dtype and shape inference.
//!
//! The element-wise ops broadcast their inputs numpy-style ([`broadcast`]) or keep the shape of their
//! one input; only their dtypes differ, and those are checked here.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;

use super::float_only;
use crate::ir::shape::broadcast;
use crate::ir::DType;

/// The output dtype of a binary op `op` with fused `act` on inputs of dtypes `x`: FLOAT, or one
/// integer or f64 type for both inputs when nothing is fused and the op is not PRelu.
pub(crate) fn infer_binary_dtype(
    op: BinaryOp,
    act: Activation,
    x: &[DType],
) -> Result<DType, String> {
    let first = x.first().copied().unwrap_or(DType::F32);
    let all_same = x.iter().all(|&t| t == first);
    if first == DType::F32 && all_same {
        return float_only(x);
    }
    if !all_same {
        return Err(format!(
            "inputs are {} and {}; they must have one type",
            x[0].name(),
            x[1].name()
        ));
    }
    let int_ok = !matches!(first, DType::F16 | DType::Bool)
        && act == Activation::None
        && op != BinaryOp::PRelu;
    if !int_ok {
        return Err(format!(
            "this op is not supported on {} tensors",
            first.name()
        ));
    }
    Ok(first)
}

/// The output dtype of `u` on an input of dtype `x[0]`: FLOAT, or the input's own integer type for
/// the unary ops exact on integers (also f64 for all but Floor, Ceil and Round).
pub(crate) fn infer_unary_dtype(u: &UnaryOp, x: &[DType]) -> Result<DType, String> {
    let first = x.first().copied().unwrap_or(DType::F32);
    if first == DType::F32 {
        return float_only(x);
    }
    let ok = match u {
        UnaryOp::Abs | UnaryOp::Neg | UnaryOp::Sign | UnaryOp::Relu | UnaryOp::Clip { .. } => true,
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => first != DType::F64,
        _ => false,
    };
    if !ok || matches!(first, DType::F16 | DType::Bool) {
        return Err(format!(
            "{u:?} is not supported on {} tensors (FLOAT only)",
            first.name()
        ));
    }
    Ok(first)
}

/// The output dtype of a comparison of inputs of dtypes `x`: Bool, both inputs of one type.
pub(crate) fn infer_compare_dtype(x: &[DType]) -> Result<DType, String> {
    if x.iter().any(|&t| t != x[0]) {
        return Err(format!(
            "compares {} with {}; both inputs must have one type",
            x[0].name(),
            x[1].name()
        ));
    }
    Ok(DType::Bool)
}

/// The output dtype of And, Or, Xor or Not on inputs of dtypes `x`: Bool, from Bool inputs only.
pub(crate) fn infer_logical_dtype(x: &[DType]) -> Result<DType, String> {
    if x.iter().any(|&t| t != DType::Bool) {
        return Err("logical ops take bool tensors".into());
    }
    Ok(DType::Bool)
}

/// The output dtype of `cond ? a : b` on inputs of dtypes `x`: that of the branches, which must
/// agree, with a Bool condition.
pub(crate) fn infer_where_dtype(x: &[DType]) -> Result<DType, String> {
    let [cond, a, b] = x else {
        return Err("the condition must be bool".into());
    };
    if *cond != DType::Bool {
        return Err("the condition must be bool".into());
    }
    if a != b {
        return Err(format!(
            "the branches are {} and {}; they must have one type",
            a.name(),
            b.name()
        ));
    }
    Ok(*a)
}

/// The output dims of the batched matrix product of `a [..., M, K]` and `b [..., K, N]`:
/// `broadcast(a[..-2], b[..-2]) ++ [M, N]`, or why they do not fit.
pub(crate) fn infer_matmul(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    if a.len() < 2 || b.len() < 2 {
        return Err(format!("operands {a:?} and {b:?} must have rank >= 2"));
    }
    let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
    let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
    if k != k2 {
        return Err(format!("inner dims of {a:?} and {b:?} differ"));
    }
    let mut y = broadcast(&a[..a.len() - 2], &b[..b.len() - 2])?;
    y.extend([m, n]);
    Ok(y)
}

/// The output dims of `cond ? a : b`: the three shapes broadcast together.
pub(crate) fn infer_where(cond: &[usize], a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    broadcast(cond, &broadcast(a, b)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Op;
    use ember_core::ops::math::compare::CompareOp;
    use ember_core::ops::math::logical::LogicalOp;

    #[test]
    fn matmul_broadcasts_the_batch_dims() {
        // [2, 1, 3, 4] x [5, 4, 6]: batch [2, 1] with [5] is [2, 5]; M = 3, N = 6.
        assert_eq!(
            infer_matmul(&[2, 1, 3, 4], &[5, 4, 6]),
            Ok(vec![2, 5, 3, 6])
        );
        assert_eq!(infer_matmul(&[3, 4], &[4, 6]), Ok(vec![3, 6]));
    }

    #[test]
    fn matmul_rejects_vectors_and_mismatched_inner_dims() {
        let err = infer_matmul(&[3, 4], &[5, 6]).unwrap_err();
        assert!(err.contains("[3, 4]") && err.contains("[5, 6]"), "{err}");
        assert!(infer_matmul(&[4], &[4, 6]).is_err());
        assert!(infer_matmul(&[2, 3, 4], &[3, 4, 6]).is_err());
    }

    #[test]
    fn element_wise_ops_broadcast_or_keep_the_shape() {
        let add = Op::Binary {
            op: BinaryOp::Add,
            act: Activation::None,
        };
        assert_eq!(add.infer(&[&[2, 1, 5], &[3, 1]]), Ok(vec![2, 3, 5]));
        assert!(add.infer(&[&[2, 3], &[4, 3]]).is_err());
        let less = Op::Compare(CompareOp::Less);
        assert_eq!(less.infer(&[&[4, 1], &[3]]), Ok(vec![4, 3]));
        let and = Op::Logical(LogicalOp::And);
        assert_eq!(and.infer(&[&[1], &[2, 2]]), Ok(vec![2, 2]));
        assert_eq!(Op::Unary(UnaryOp::Neg).infer(&[&[2, 3]]), Ok(vec![2, 3]));
        assert_eq!(Op::Not.infer(&[&[7]]), Ok(vec![7]));
        let cast = Op::Cast { to: DType::I64 };
        assert_eq!(cast.infer(&[&[2, 0]]), Ok(vec![2, 0]));
    }

    #[test]
    fn where_broadcasts_all_three_inputs() {
        assert_eq!(infer_where(&[2, 1, 1], &[1, 3, 1], &[4]), Ok(vec![2, 3, 4]));
        assert!(infer_where(&[2], &[3], &[1]).is_err());
        assert!(Op::Where.infer(&[&[1], &[1]]).is_err());
    }

    #[test]
    fn binary_dtypes_are_float_or_one_plain_integer_type() {
        let (add, none) = (BinaryOp::Add, Activation::None);
        let f32s = [DType::F32, DType::F32];
        assert_eq!(infer_binary_dtype(add, none, &f32s), Ok(DType::F32));
        assert_eq!(
            infer_binary_dtype(BinaryOp::PRelu, Activation::Relu, &f32s),
            Ok(DType::F32)
        );
        let i32s = [DType::I32, DType::I32];
        assert_eq!(infer_binary_dtype(add, none, &i32s), Ok(DType::I32));
        assert!(infer_binary_dtype(add, Activation::Relu, &i32s).is_err());
        assert!(infer_binary_dtype(BinaryOp::PRelu, none, &i32s).is_err());
        assert!(infer_binary_dtype(add, none, &[DType::F16, DType::F16]).is_err());
        let err = infer_binary_dtype(add, none, &[DType::F32, DType::I64]).unwrap_err();
        assert!(err.contains("one type"), "{err}");
    }

    #[test]
    fn unary_dtypes_allow_integers_for_exact_ops_only() {
        assert_eq!(
            infer_unary_dtype(&UnaryOp::Exp, &[DType::F32]),
            Ok(DType::F32)
        );
        assert_eq!(
            infer_unary_dtype(&UnaryOp::Abs, &[DType::I32]),
            Ok(DType::I32)
        );
        assert_eq!(
            infer_unary_dtype(&UnaryOp::Floor, &[DType::I64]),
            Ok(DType::I64)
        );
        assert!(infer_unary_dtype(&UnaryOp::Floor, &[DType::F64]).is_err());
        assert!(infer_unary_dtype(&UnaryOp::Exp, &[DType::I32]).is_err());
        assert!(infer_unary_dtype(&UnaryOp::Neg, &[DType::Bool]).is_err());
    }

    #[test]
    fn compare_logical_and_where_dtypes() {
        assert_eq!(
            infer_compare_dtype(&[DType::I64, DType::I64]),
            Ok(DType::Bool)
        );
        assert!(infer_compare_dtype(&[DType::I64, DType::F32]).is_err());
        assert_eq!(
            infer_logical_dtype(&[DType::Bool, DType::Bool]),
            Ok(DType::Bool)
        );
        assert!(infer_logical_dtype(&[DType::Bool, DType::I32]).is_err());
        let w = [DType::Bool, DType::I64, DType::I64];
        assert_eq!(infer_where_dtype(&w), Ok(DType::I64));
        assert!(infer_where_dtype(&[DType::F32, DType::I64, DType::I64]).is_err());
        assert!(infer_where_dtype(&[DType::Bool, DType::I64, DType::F32]).is_err());
        assert!(infer_where_dtype(&[DType::Bool, DType::F32]).is_err());
    }
}
