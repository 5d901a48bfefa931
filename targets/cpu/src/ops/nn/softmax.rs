//! Softmax and LogSoftmax along one axis, vectorized: along the rows when the axis is the last one
//! (the maximum, the exponentials and their sum as vector loops over the row), across the columns
//! otherwise (a vector of `LANES` neighbouring lanes at a time, stepping down the axis).
//!
//! As the reference: the maximum ignores NaN (a lane with NaN comes out NaN through its exponential),
//! Softmax multiplies by `1 / sum`, and LogSoftmax subtracts `max` then `log(sum)` (the one logarithm
//! per lane is `libm`'s). The exponentials are [`exp`]'s, and the sums add in another order than the
//! reference's left-to-right loop: results agree within a few ulp.

use ember_core::ops::nn::softmax::SoftmaxParams;
use ember_core::ops::{In, Out};

use crate::simd::math::exp;
use crate::simd::{fold, lanes, load_part, map, map_in_place, per_level, store_part, Simd};

per_level! {
    simd:
    fn softmax(p: &SoftmaxParams, x: In<'_>, y: Out<'_>) => softmax_on;
    fn log_softmax(p: &SoftmaxParams, x: In<'_>, y: Out<'_>) => log_softmax_on;
}

/// `x` as blocks of `[len, inner]` around the axis: `(block, inner)`, or `None` when empty.
fn blocks(p: &SoftmaxParams, dims: &[usize]) -> Option<(usize, usize)> {
    let axis = usize::from(p.axis);
    let inner: usize = dims[axis + 1..].iter().product();
    let block = dims[axis] * inner;
    (block > 0).then_some((block, inner))
}

#[inline(always)]
fn softmax_on<S: Simd>(s: S, p: &SoftmaxParams, x: In<'_>, y: Out<'_>) {
    softmax_or_log::<S, false>(s, p, x, y)
}

#[inline(always)]
fn log_softmax_on<S: Simd>(s: S, p: &SoftmaxParams, x: In<'_>, y: Out<'_>) {
    softmax_or_log::<S, true>(s, p, x, y)
}

/// Softmax, or LogSoftmax where `LOG`, of each block of `x` around the axis: along the row where the
/// axis is the last one, else down the columns.
#[inline(always)]
fn softmax_or_log<S: Simd, const LOG: bool>(s: S, p: &SoftmaxParams, x: In<'_>, y: Out<'_>) {
    let Some((block, inner)) = blocks(p, x.dims) else {
        return;
    };
    for (xs, ys) in x
        .data
        .chunks_exact(block)
        .zip(y.data.chunks_exact_mut(block))
    {
        if inner > 1 {
            for j in (0..inner).step_by(S::LANES) {
                softmax_columns(s, xs, ys, inner, j, LOG);
            }
        } else if LOG {
            log_softmax_row(s, xs, ys);
        } else {
            softmax_row(s, xs, ys);
        }
    }
}

/// Softmax of one row.
#[inline(always)]
fn softmax_row<S: Simd>(s: S, xs: &[f32], ys: &mut [f32]) {
    let m = s.splat(row_max(s, xs));
    map(s, xs, ys, |v| exp(s, s.sub(v, m)));
    let add = |a, b| s.add(a, b);
    let sum = s.sum(fold(s, ys, s.splat(0.0), 0.0, add, add));
    let scale = s.splat(1.0 / sum);
    map_in_place(s, ys, |e| s.mul(e, scale));
}

/// LogSoftmax of one row.
#[inline(always)]
fn log_softmax_row<S: Simd>(s: S, xs: &[f32], ys: &mut [f32]) {
    let max = row_max(s, xs);
    let m = s.splat(max);
    // Padding lanes hold -inf, whose exponential adds 0.
    let sum = fold(
        s,
        xs,
        s.splat(0.0),
        f32::NEG_INFINITY,
        |acc, v| s.add(acc, exp(s, s.sub(v, m))),
        |a, b| s.add(a, b),
    );
    let log_sum = s.splat(libm::logf(s.sum(sum)));
    map(s, xs, ys, |v| s.sub(s.sub(v, m), log_sum));
}

/// The largest value of a non-empty row, NaN ignored (as `f32::max` does; -inf if all are NaN).
#[inline(always)]
fn row_max<S: Simd>(s: S, x: &[f32]) -> f32 {
    // `v > acc ? v : acc` never takes a NaN `v`.
    let max = |acc, v| s.max(v, acc);
    let v = fold(
        s,
        x,
        s.splat(f32::NEG_INFINITY),
        f32::NEG_INFINITY,
        max,
        max,
    );
    lanes(s, v)[..S::LANES]
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v))
}

/// Softmax (or LogSoftmax when `log`) of the lanes `j..j + LANES` (fewer at the end) of a block
/// `[len, inner]`, stepping down the axis.
#[inline(always)]
fn softmax_columns<S: Simd>(s: S, x: &[f32], y: &mut [f32], inner: usize, j: usize, log: bool) {
    let width = S::LANES.min(inner - j);
    let rows = || (j..x.len()).step_by(inner);
    let mut m = s.splat(f32::NEG_INFINITY);
    for at in rows() {
        m = s.max(load_part(s, &x[at..at + width], 0.0), m);
    }
    let mut sum = s.splat(0.0);
    for at in rows() {
        let e = exp(s, s.sub(load_part(s, &x[at..at + width], 0.0), m));
        sum = s.add(sum, e);
        if !log {
            store_part(s, &mut y[at..at + width], e);
        }
    }
    if log {
        let mut log_sum = lanes(s, sum);
        for v in &mut log_sum {
            *v = libm::logf(*v);
        }
        let log_sum = load_part(s, &log_sum[..S::LANES], 0.0);
        for at in rows() {
            let v = s.sub(s.sub(load_part(s, &x[at..at + width], 0.0), m), log_sum);
            store_part(s, &mut y[at..at + width], v);
        }
    } else {
        let scale = s.div(s.splat(1.0), sum);
        for at in rows() {
            let e = load_part(s, &y[at..at + width], 0.0);
            store_part(s, &mut y[at..at + width], s.mul(e, scale));
        }
    }
}
