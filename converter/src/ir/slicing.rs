//! Evaluation of the IR's array ops beyond reshapes and transposes (strided slice, gather, broadcast,
//! concat) on constants at conversion time (shape subgraphs: `Shape -> Gather -> Concat -> Reshape`,
//! masks, ...). Their parameters and shape inference are in [`super::op::array`], re-exported here
//! for the callers that evaluate them.
//!
//! Evaluation works on source indices: each op computes, for every output element, the flat index of
//! the input element it copies, and [`pick`] applies that to f32 or i64 data alike.

pub use super::op::array::{
    infer_broadcast, infer_gather, infer_resize, infer_slice, Resize, Slice,
};
use super::shape::numel;
use super::ConstData;

fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Calls `f` with every multi-index of `dims`, row-major.
fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    let Ok(n) = numel(dims) else { return };
    let mut index = vec![0; dims.len()];
    for _ in 0..n {
        f(&index);
        for d in (0..dims.len()).rev() {
            index[d] += 1;
            if index[d] < dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// Source indices of a slice of `x` (checked by [`infer_slice`]).
pub fn slice_sources(s: &Slice, x: &[usize]) -> Vec<usize> {
    let st = strides(x);
    let mut out = Vec::new();
    for_each_index(&s.size, |j| {
        let at: i64 = (0..x.len())
            .map(|i| (s.start[i] as i64 + j[i] as i64 * s.step[i]) * st[i] as i64)
            .sum();
        out.push(at as usize);
    });
    out
}

/// Source indices of a gather of `x` along `axis` (indices resolved, inside the axis).
pub fn gather_sources(axis: usize, x: &[usize], indices: &[usize]) -> Vec<usize> {
    let inner: usize = x[axis + 1..].iter().product();
    let outer: usize = x[..axis].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for &i in indices {
            let base = (o * x[axis] + i) * inner;
            out.extend(base..base + inner);
        }
    }
    out
}

/// Source indices of a broadcast of `x` to `shape` (checked by [`infer_broadcast`]).
pub fn broadcast_sources(x: &[usize], shape: &[usize]) -> Vec<usize> {
    let pad = shape.len() - x.len();
    let st = strides(x);
    let mut out = Vec::new();
    for_each_index(shape, |j| {
        let at: usize = (0..x.len())
            .map(|i| if x[i] == 1 { 0 } else { j[pad + i] * st[i] })
            .sum();
        out.push(at);
    });
    out
}

/// The elements of `x` at `sources`, in order.
pub fn pick(x: &ConstData, sources: &[usize]) -> ConstData {
    match x {
        ConstData::F32(v) => ConstData::F32(sources.iter().map(|&i| v[i]).collect()),
        ConstData::I64(v) => ConstData::I64(sources.iter().map(|&i| v[i]).collect()),
    }
}

/// Constants joined along `axis` (same rank, same dims off the axis, same element type).
pub fn concat(xs: &[(&[usize], &ConstData)], axis: usize) -> Result<ConstData, String> {
    let outer: usize = xs[0].0[..axis].iter().product();
    let run = |dims: &[usize]| dims[axis..].iter().product::<usize>();
    match xs[0].1 {
        ConstData::F32(_) => concat_as(xs, outer, run, |d| match d {
            ConstData::F32(v) => Some(v),
            ConstData::I64(_) => None,
        })
        .map(ConstData::F32),
        ConstData::I64(_) => concat_as(xs, outer, run, |d| match d {
            ConstData::I64(v) => Some(v),
            ConstData::F32(_) => None,
        })
        .map(ConstData::I64),
    }
}

/// [`concat`] of constants whose elements `values` gives (`None`: another element type), `outer`
/// blocks of `run(dims)` elements from each.
fn concat_as<T: Copy>(
    xs: &[(&[usize], &ConstData)],
    outer: usize,
    run: impl Fn(&[usize]) -> usize,
    values: impl Fn(&ConstData) -> Option<&Vec<T>>,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for o in 0..outer {
        for (dims, data) in xs {
            let v = values(data).ok_or("inputs mix FLOAT and integer constants")?;
            out.extend_from_slice(&v[o * run(dims)..][..run(dims)]);
        }
    }
    Ok(out)
}
