//! The IR's array ops beyond reshapes and transposes (strided slice, gather, broadcast, resize): their
//! parameters and shape inference. On constants they are evaluated like every op, by the runtime's
//! kernels (`ir::eval`).

use ember_core::ops::array::resize::ResizeParams;

use super::shape::numel;

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
