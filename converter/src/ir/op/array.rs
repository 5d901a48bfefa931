//! The IR's array ops, which move or pick elements without computing on them
//! ([`Op::Concat`](super::Op::Concat), [`Op::Transpose`](super::Op::Transpose),
//! [`Op::Pad`](super::Op::Pad), [`Op::Reshape`](super::Op::Reshape), [`Op::Slice`](super::Op::Slice),
//! [`Op::Gather`](super::Op::Gather), [`Op::Broadcast`](super::Op::Broadcast),
//! [`Op::Resize`](super::Op::Resize), [`Op::Embedding`](super::Op::Embedding)): their parameters, dtype
//! and shape inference. On constants they are evaluated like every op, by the runtime's kernels
//! ([`crate::ir::eval`]).

use ember_core::ops::array::resize::ResizeParams;

use crate::ir::shape::{broadcasts_to, numel};
use crate::ir::DType;

/// A strided slice: on axis `i`, `size[i]` elements from input index `start[i]`, `step[i]` apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// First input index on each axis.
    pub start: Vec<usize>,
    /// Step on each axis (non-zero, may be negative).
    pub step: Vec<i64>,
    /// Output dims.
    pub size: Vec<usize>,
}

/// A resize of the H and W axes (the last two, or the two before the channels when
/// `params.channels_last`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resize {
    /// Mode, coordinate transformation and scales, as the blob stores them.
    pub params: ResizeParams,
    /// Output `[h, w]`.
    pub size: [usize; 2],
}

/// The output dtype of an op that only moves elements (Concat, Transpose, Pad, Reshape, Slice,
/// Broadcast): that of its inputs, which must agree.
pub(crate) fn infer_moved_dtype(x: &[DType]) -> Result<DType, String> {
    let first = x.first().copied().unwrap_or(DType::F32);
    if x.iter().any(|&t| t != first) {
        return Err("inputs of different types".into());
    }
    Ok(first)
}

/// The output dtype of a gather from data of dtype `x[0]` with constant (f32) indices.
pub(crate) fn infer_gather_dtype(x: &[DType]) -> Result<DType, String> {
    if x.get(1).is_some_and(|&t| t != DType::F32) {
        return Err("gather indices must be a constant".into());
    }
    Ok(x.first().copied().unwrap_or(DType::F32))
}

/// The output dtype of an embedding lookup: FLOAT, from a FLOAT table (or an int8 one with f32
/// scales) and INT32 or INT64 ids.
pub(crate) fn infer_embedding_dtype(x: &[DType]) -> Result<DType, String> {
    let table_ok = matches!(
        (x.first(), x.get(2)),
        (Some(DType::F32), None) | (Some(DType::I8), Some(DType::F32))
    );
    if !table_ok {
        return Err("an embedding table is FLOAT (or int8 with f32 scales)".into());
    }
    if !matches!(x.get(1), Some(DType::I32 | DType::I64)) {
        return Err(format!(
            "embedding ids are {}; they must be INT32 or INT64",
            x.get(1).map_or("missing", |t| t.name())
        ));
    }
    Ok(DType::F32)
}

/// Output dims of the inputs `x` joined along `axis`: the same dims off the axis, their sizes on it
/// summed.
pub(crate) fn infer_concat(x: &[&[usize]], axis: usize) -> Result<Vec<usize>, String> {
    let first = *x.first().ok_or("expects at least one input")?;
    if axis >= first.len() {
        return Err(format!("axis {axis} is out of range for {first:?}"));
    }
    let mut y = first.to_vec();
    y[axis] = 0;
    for s in x {
        let same_rank = s.len() == first.len();
        if !same_rank || (0..s.len()).any(|i| i != axis && s[i] != first[i]) {
            return Err(format!(
                "input {s:?} does not match {first:?} outside axis {axis}"
            ));
        }
        y[axis] = y[axis].checked_add(s[axis]).ok_or("size overflows")?;
    }
    Ok(y)
}

/// Output dims of `x` with `before[i]` and `after[i]` elements added on axis `i`.
pub(crate) fn infer_pad(
    x: &[usize],
    before: &[usize],
    after: &[usize],
) -> Result<Vec<usize>, String> {
    if before.len() != x.len() || after.len() != x.len() {
        return Err(format!("pads do not match rank {}", x.len()));
    }
    (0..x.len())
        .map(|i| {
            x[i].checked_add(before[i])
                .and_then(|v| v.checked_add(after[i]))
                .ok_or_else(|| "padded size overflows".to_string())
        })
        .collect()
}

/// Checks that `x` has as many elements as `shape`, which is the output.
pub(crate) fn infer_reshape(x: &[usize], shape: &[usize]) -> Result<Vec<usize>, String> {
    if numel(x)? != numel(shape)? {
        return Err(format!(
            "cannot reshape {x:?} to {shape:?}: element counts differ"
        ));
    }
    Ok(shape.to_vec())
}

/// Output dims of a slice of `x`, checking every index read lies inside `x`.
pub fn infer_slice(s: &Slice, x: &[usize]) -> Result<Vec<usize>, String> {
    if s.start.len() != x.len() || s.step.len() != x.len() || s.size.len() != x.len() {
        return Err(format!(
            "slice parameters {s:?} do not match rank {}",
            x.len()
        ));
    }
    if !s.size.contains(&0) {
        for i in 0..x.len() {
            let last = s.start[i] as i128 + (s.size[i] as i128 - 1) * i128::from(s.step[i]);
            if s.step[i] == 0 || s.start[i] >= x[i] || last < 0 || last >= x[i] as i128 {
                return Err(format!("slice {s:?} reads outside {x:?} on axis {i}"));
            }
        }
    }
    Ok(s.size.clone())
}

/// Output dims of a gather of `x` along `axis` with indices of dims `indices`.
pub fn infer_gather(axis: usize, x: &[usize], indices: &[usize]) -> Result<Vec<usize>, String> {
    if axis >= x.len() {
        return Err(format!("axis {axis} is out of range for {x:?}"));
    }
    let mut y = x[..axis].to_vec();
    y.extend(indices);
    y.extend(&x[axis + 1..]);
    Ok(y)
}

/// Checks that `x` broadcasts (one way, numpy rules) to `shape`.
pub fn infer_broadcast(x: &[usize], shape: &[usize]) -> Result<Vec<usize>, String> {
    if broadcasts_to(x, shape) {
        numel(shape)?;
        Ok(shape.to_vec())
    } else {
        Err(format!("{x:?} does not broadcast to {shape:?}"))
    }
}

/// Output dims of a resize of `x`.
pub fn infer_resize(r: &Resize, x: &[usize]) -> Result<Vec<usize>, String> {
    let lanes = usize::from(r.params.channels_last);
    if x.len() < 2 + lanes {
        return Err(format!("input {x:?} must have rank >= {}", 2 + lanes));
    }
    let mut y = x.to_vec();
    let h = x.len() - 2 - lanes;
    y[h..h + 2].copy_from_slice(&r.size);
    numel(&y)?;
    Ok(y)
}

/// Output dims of the rows of `table [ROWS, ...]` picked by ids of dims `ids`: `ids ++ table[1..]`;
/// `scales`, for an int8 table, must be `[ROWS]`.
pub(crate) fn infer_embedding(
    table: &[usize],
    ids: &[usize],
    scales: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    let Some((&rows, row)) = table.split_first() else {
        return Err("the table must have rank >= 1".into());
    };
    if rows == 0 {
        return Err("the table has no rows".into());
    }
    if let Some(s) = scales {
        if *s != [rows] {
            return Err(format!("scales {s:?} must be [{rows}]"));
        }
    }
    Ok(ids.iter().chain(row).copied().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Op;
    use ember_core::ops::array::resize::{CoordMode, ResizeMode};

    #[test]
    fn concat_sums_the_axis() {
        assert_eq!(infer_concat(&[&[2, 3], &[2, 5]], 1), Ok(vec![2, 8]));
        assert_eq!(
            infer_concat(&[&[1, 4], &[2, 4], &[3, 4]], 0),
            Ok(vec![6, 4])
        );
        assert_eq!(infer_concat(&[&[2, 3]], 0), Ok(vec![2, 3]));
    }

    #[test]
    fn concat_rejects_mismatched_inputs() {
        let err = infer_concat(&[&[2, 3], &[4, 5]], 1).unwrap_err();
        assert!(err.contains("[4, 5]") && err.contains("[2, 3]"), "{err}");
        assert!(infer_concat(&[&[2, 3], &[2, 3, 1]], 1).is_err());
        assert!(infer_concat(&[&[2, 3], &[2, 3]], 2).is_err());
        assert!(infer_concat(&[], 0).is_err());
        assert!(infer_concat(&[&[usize::MAX], &[1]], 0).is_err());
        assert!(Op::Concat { axis: 0 }.infer(&[]).is_err());
    }

    #[test]
    fn transpose_permutes_the_dims() {
        let t = Op::Transpose {
            perm: vec![0, 2, 3, 1],
        };
        assert_eq!(t.infer(&[&[1, 3, 8, 9]]), Ok(vec![1, 8, 9, 3]));
        assert!(t.infer(&[&[1, 3, 8]]).is_err());
        let not_a_perm = Op::Transpose { perm: vec![0, 0] };
        assert!(not_a_perm.infer(&[&[2, 2]]).is_err());
    }

    #[test]
    fn pad_adds_both_sides() {
        assert_eq!(
            infer_pad(&[1, 3, 4], &[0, 1, 2], &[0, 1, 3]),
            Ok(vec![1, 5, 9])
        );
        assert!(infer_pad(&[1, 3], &[0], &[0, 0]).is_err());
        assert!(infer_pad(&[usize::MAX], &[1], &[0]).is_err());
    }

    #[test]
    fn reshape_keeps_the_element_count() {
        assert_eq!(infer_reshape(&[2, 3, 4], &[6, 4]), Ok(vec![6, 4]));
        assert_eq!(infer_reshape(&[2, 0], &[0, 5]), Ok(vec![0, 5]));
        let err = infer_reshape(&[2, 3], &[4, 2]).unwrap_err();
        assert!(err.contains("[2, 3]") && err.contains("[4, 2]"), "{err}");
        assert!(infer_reshape(&[usize::MAX, 2], &[1]).is_err());
    }

    #[test]
    fn slice_reads_inside_the_input() {
        // Axis 0: 2 elements from 1, step 2 (indices 1, 3 of 4); axis 1: 3 from 4, step -1.
        let s = Slice {
            start: vec![1, 4],
            step: vec![2, -1],
            size: vec![2, 3],
        };
        assert_eq!(infer_slice(&s, &[4, 5]), Ok(vec![2, 3]));
        assert!(infer_slice(&s, &[3, 5]).is_err());
        assert!(infer_slice(&s, &[4, 4]).is_err());
        assert!(infer_slice(&s, &[4, 5, 1]).is_err());
        let backwards_too_far = Slice {
            start: vec![1],
            step: vec![-1],
            size: vec![3],
        };
        assert!(infer_slice(&backwards_too_far, &[4]).is_err());
        let zero_step = Slice {
            start: vec![0],
            step: vec![0],
            size: vec![1],
        };
        assert!(infer_slice(&zero_step, &[4]).is_err());
        let empty = Slice {
            start: vec![9],
            step: vec![1],
            size: vec![0],
        };
        assert_eq!(infer_slice(&empty, &[4]), Ok(vec![0]));
    }

    #[test]
    fn gather_replaces_the_axis_by_the_indices() {
        assert_eq!(infer_gather(1, &[2, 5, 3], &[4, 6]), Ok(vec![2, 4, 6, 3]));
        assert_eq!(infer_gather(0, &[5, 3], &[]), Ok(vec![3]));
        assert!(infer_gather(2, &[5, 3], &[1]).is_err());
    }

    #[test]
    fn broadcast_is_one_way() {
        assert_eq!(infer_broadcast(&[3, 1], &[2, 3, 4]), Ok(vec![2, 3, 4]));
        assert!(infer_broadcast(&[3, 2], &[3, 4]).is_err());
        assert!(infer_broadcast(&[1, 1, 1], &[1, 1]).is_err());
        assert!(infer_broadcast(&[1], &[usize::MAX, 2]).is_err());
    }

    #[test]
    fn resize_sets_height_and_width() {
        let mut r = Resize {
            params: ResizeParams {
                mode: ResizeMode::Linear,
                coord: CoordMode::Asymmetric,
                scale_h: 2.0,
                scale_w: 2.0,
                channels_last: false,
            },
            size: [6, 8],
        };
        assert_eq!(infer_resize(&r, &[1, 3, 3, 4]), Ok(vec![1, 3, 6, 8]));
        assert!(infer_resize(&r, &[4]).is_err());
        r.params.channels_last = true;
        assert_eq!(infer_resize(&r, &[1, 3, 4, 5]), Ok(vec![1, 6, 8, 5]));
        assert!(infer_resize(&r, &[3, 4]).is_err());
    }

    #[test]
    fn embedding_prepends_the_ids() {
        assert_eq!(infer_embedding(&[10, 4], &[2, 3], None), Ok(vec![2, 3, 4]));
        assert_eq!(infer_embedding(&[10, 4], &[2], Some(&[10])), Ok(vec![2, 4]));
        assert!(infer_embedding(&[10, 4], &[2], Some(&[4])).is_err());
        assert!(infer_embedding(&[0, 4], &[2], None).is_err());
        assert!(infer_embedding(&[], &[2], None).is_err());
    }

    #[test]
    fn array_dtypes() {
        assert_eq!(infer_moved_dtype(&[DType::I64, DType::I64]), Ok(DType::I64));
        assert!(infer_moved_dtype(&[DType::I64, DType::F32]).is_err());
        assert_eq!(
            infer_gather_dtype(&[DType::I64, DType::F32]),
            Ok(DType::I64)
        );
        assert!(infer_gather_dtype(&[DType::F32, DType::I64]).is_err());
        let fp = [DType::F32, DType::I64];
        assert_eq!(infer_embedding_dtype(&fp), Ok(DType::F32));
        let int8 = [DType::I8, DType::I32, DType::F32];
        assert_eq!(infer_embedding_dtype(&int8), Ok(DType::F32));
        assert!(infer_embedding_dtype(&[DType::I8, DType::I32]).is_err());
        assert!(infer_embedding_dtype(&[DType::F32, DType::F32]).is_err());
        assert!(infer_embedding_dtype(&[DType::F32]).is_err());
    }
}
