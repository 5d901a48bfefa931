//! Shape rules used by the importers and passes.

use ember_convert::ir::eval::eval;
use ember_convert::ir::shape::{
    broadcast, invert_permutation, moves_only_unit_dims, resolve_axis, window_out,
};
use ember_convert::ir::{ConstData, DType, Op};
use ember_convert::onnx::ops::array::reshape::resolve_shape;

#[test]
fn reshape_zero_and_minus_one() {
    assert_eq!(resolve_shape(&[2, 3, 4], &[0, -1], false), Ok(vec![2, 12]));
    assert_eq!(
        resolve_shape(&[2, 3, 4], &[-1, 0, 2], false),
        Ok(vec![4, 3, 2])
    );
    assert_eq!(resolve_shape(&[2, 3, 4], &[4, 6], false), Ok(vec![4, 6]));
    assert!(resolve_shape(&[2, 3, 4], &[-1, -1], false).is_err());
    assert!(resolve_shape(&[2, 3, 4], &[5, -1], false).is_err());
    assert!(resolve_shape(&[2, 3, 4], &[0, 0, 0, 0], false).is_err());
    assert!(resolve_shape(&[2, 3, 4], &[-2, 12], false).is_err());
    // allowzero: a 0 is a real zero.
    assert_eq!(resolve_shape(&[0, 3], &[3, 0], true), Ok(vec![3, 0]));
    assert!(resolve_shape(&[2, 3], &[0, 6], true).is_err());
}

#[test]
fn numpy_broadcasting() {
    assert_eq!(broadcast(&[2, 3, 4], &[4]), Ok(vec![2, 3, 4]));
    assert_eq!(broadcast(&[2, 1, 4], &[3, 1]), Ok(vec![2, 3, 4]));
    assert_eq!(broadcast(&[], &[5]), Ok(vec![5]));
    assert!(broadcast(&[2, 3], &[2]).is_err());
}

#[test]
fn window_sizes() {
    assert_eq!(window_out(8, 3, 1, 1, 1, 1), Ok(8));
    assert_eq!(window_out(7, 3, 2, 1, 1, 1), Ok(4));
    assert_eq!(window_out(9, 3, 1, 2, 0, 0), Ok(5));
    assert!(window_out(2, 3, 1, 1, 0, 0).is_err());
    assert!(window_out(8, 3, 0, 1, 0, 0).is_err());
    assert!(window_out(usize::MAX, 3, 1, 1, 1, 1).is_err());
}

#[test]
fn axes_and_permutations() {
    assert_eq!(resolve_axis(-1, 4), Ok(3));
    assert!(resolve_axis(4, 4).is_err());
    assert!(resolve_axis(-5, 4).is_err());
    assert_eq!(invert_permutation(&[0, 2, 3, 1]), vec![0, 3, 1, 2]);
    assert!(moves_only_unit_dims(&[5, 1, 8, 8], &[0, 2, 3, 1]));
    assert!(!moves_only_unit_dims(&[5, 2, 8, 8], &[0, 2, 3, 1]));
    assert!(moves_only_unit_dims(&[1, 4, 1, 1], &[0, 2, 3, 1]));
}

/// `x` of `dims` transposed by `perm`, as the converter folds it (through the runtime's kernel).
fn transpose(x: &[i64], dims: &[usize], perm: &[usize]) -> Vec<i64> {
    let out: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let op = Op::Transpose {
        perm: perm.to_vec(),
    };
    let x = ConstData::I64(x.to_vec());
    match eval(&op, &[(dims, &x, DType::I64)], &out, DType::I64) {
        Ok(Some(ConstData::I64(v))) => v,
        other => panic!("a transpose of a constant folds to int64 values, not {other:?}"),
    }
}

#[test]
fn transpose_data() {
    // [2, 3] -> [3, 2]
    let x = [0, 1, 2, 3, 4, 5];
    assert_eq!(transpose(&x, &[2, 3], &[1, 0]), vec![0, 3, 1, 4, 2, 5]);
    // NCHW [1, 2, 2, 2] -> NHWC
    let x: Vec<i64> = (0..8).collect();
    assert_eq!(
        transpose(&x, &[1, 2, 2, 2], &[0, 2, 3, 1]),
        vec![0, 4, 1, 5, 2, 6, 3, 7]
    );
    assert_eq!(transpose(&[7], &[], &[]), vec![7]);
}
