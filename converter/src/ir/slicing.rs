//! The IR's array ops beyond reshapes and transposes (strided slice, gather, broadcast, resize): their
//! parameters, shape inference, and their evaluation on constants at conversion time (shape
//! subgraphs: `Shape -> Gather -> Concat -> Reshape`, masks, ...).
//!
//! Evaluation works on source indices: each op computes, for every output element, the flat index of
//! the input element it copies, and [`pick`] applies that to f32 or i64 data alike.

use ember_core::ops::array::resize::ResizeParams;

use super::shape::numel;
use super::ConstData;

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
    let fits = x.len() <= shape.len()
        && x.iter()
            .rev()
            .zip(shape.iter().rev())
            .all(|(&a, &b)| a == b || a == 1);
    if fits {
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
