//! Shape arithmetic shared by shape inference, the importers and the passes. Every function checks
//! its inputs and returns a reason instead of overflowing or panicking.

/// Checks that an op given `n` inputs takes that many: from `lo` to `hi`.
pub fn arity(n: usize, lo: usize, hi: usize) -> Result<(), String> {
    if n < lo || n > hi {
        Err(format!("expects {lo} to {hi} inputs, got {n}"))
    } else {
        Ok(())
    }
}

/// Number of elements, or an error when the product overflows `usize`.
pub fn numel(dims: &[usize]) -> Result<usize, String> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("shape {dims:?} has too many elements"))
}

/// Numpy-style (right-aligned) broadcast of two shapes.
pub fn broadcast(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        let pad = rank - s.len();
        if i < pad {
            1
        } else {
            s[i - pad]
        }
    };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => Err(format!("shapes {a:?} and {b:?} do not broadcast")),
        })
        .collect()
}

/// True if `shape` broadcasts to `target` without growing it (numpy rules, one way: ONNX's
/// unidirectional broadcasting).
pub fn broadcasts_to(shape: &[usize], target: &[usize]) -> bool {
    shape.len() <= target.len()
        && shape
            .iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(&s, &d)| s == d || s == 1)
}

/// True if `perm` is a permutation of `0..perm.len()`.
pub fn is_permutation(perm: &[usize]) -> bool {
    let mut seen = vec![false; perm.len()];
    perm.iter()
        .all(|&p| p < perm.len() && !std::mem::replace(&mut seen[p], true))
}

/// `out[i] = dims[perm[i]]`; `perm` must be a permutation of the rank.
pub fn permute(dims: &[usize], perm: &[usize]) -> Result<Vec<usize>, String> {
    if perm.len() != dims.len() || !is_permutation(perm) {
        return Err(format!(
            "{perm:?} is not a permutation of the {} axes of {dims:?}",
            dims.len()
        ));
    }
    Ok(perm.iter().map(|&p| dims[p]).collect())
}

/// The inverse permutation.
pub fn invert_permutation(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        if let Some(slot) = inv.get_mut(p) {
            *slot = i;
        }
    }
    inv
}

/// True if the permutation only moves size-1 dims: the other dims keep their relative order, so the
/// bytes do not move and the transpose is a reshape.
pub fn moves_only_unit_dims(dims: &[usize], perm: &[usize]) -> bool {
    let kept: Vec<usize> = perm.iter().copied().filter(|&p| dims[p] != 1).collect();
    kept.windows(2).all(|w| w[0] < w[1])
}

/// Output size of a sliding window along one axis (floor rounding):
/// `(size + pad_begin + pad_end - dilation * (kernel - 1) - 1) / stride + 1`.
pub fn window_out(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_begin: usize,
    pad_end: usize,
) -> Result<usize, String> {
    if kernel == 0 || stride == 0 || dilation == 0 {
        return Err(format!(
            "kernel {kernel}, stride {stride} and dilation {dilation} must all be at least 1"
        ));
    }
    let padded = size
        .checked_add(pad_begin)
        .and_then(|s| s.checked_add(pad_end))
        .ok_or("padding overflows")?;
    let span = dilation
        .checked_mul(kernel - 1)
        .and_then(|s| s.checked_add(1))
        .ok_or("kernel span overflows")?;
    if padded < span {
        return Err(format!(
            "the window spans {span} cells, more than the padded input ({padded})"
        ));
    }
    Ok((padded - span) / stride + 1)
}

/// Resolves a possibly negative axis against a rank (`-1` is the last axis).
pub fn resolve_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = i64::try_from(rank).map_err(|_| "rank too large".to_string())?;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        // 0 <= a < rank, so the conversion is lossless.
        Ok(a as usize)
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

/// Converts ONNX dims (i64) to sizes, rejecting negative values.
pub fn dims_from_i64(dims: &[i64]) -> Result<Vec<usize>, String> {
    dims.iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dims {dims:?} contain a negative size")))
        .collect()
}
