//! Evaluation of data-movement ops on constants at conversion time: a Reshape or Transpose of a
//! constant is a constant, so it never reaches the blob as an op.

use super::{ConstData, Op};

/// The value of `op` applied to constant `x` of dims `shape`, for the ops that can be folded.
pub fn fold(op: &Op, x: &ConstData, shape: &[usize]) -> Option<ConstData> {
    match op {
        Op::Reshape { .. } => Some(x.clone()),
        Op::Transpose { perm } => Some(match x {
            ConstData::F32(v) => ConstData::F32(transpose(v, shape, perm)),
            ConstData::I64(v) => ConstData::I64(transpose(v, shape, perm)),
        }),
        Op::Slice(s) => Some(super::slicing::pick(
            x,
            &super::slicing::slice_sources(s, shape),
        )),
        Op::Broadcast { shape: to } => Some(super::slicing::pick(
            x,
            &super::slicing::broadcast_sources(shape, to),
        )),
        _ => None,
    }
}

/// Row-major transpose: output dim `i` is input dim `perm[i]`. `perm` must be a permutation of the
/// rank and `data.len()` the product of `shape` (the callers check both).
pub fn transpose<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Vec<T> {
    let rank = shape.len();
    // Input strides, then the input stride of each output dim.
    let mut strides = vec![1usize; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let out_dims: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let out_strides: Vec<usize> = perm.iter().map(|&p| strides[p]).collect();
    let mut out = Vec::with_capacity(data.len());
    let mut index = vec![0usize; rank];
    for _ in 0..data.len() {
        let src: usize = index.iter().zip(&out_strides).map(|(i, s)| i * s).sum();
        out.push(data[src]);
        for d in (0..rank).rev() {
            index[d] += 1;
            if index[d] < out_dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out
}
