//! Reductions over one contiguous run of axes (`axes` a single run of set bits: the last axes, the
//! first ones, or a middle run such as H and W of NHWC), seen as `[outer, count, inner]`: with
//! `inner = 1` each output folds a contiguous lane with vector accumulators; otherwise each output
//! row of `inner` values accumulates the `count` contiguous input rows above it, vector by vector.
//! Sum, Mean, Max, Min, Prod, L1, L2, SumSquare and LogSum; LogSumExp, and axes that are not one run,
//! go to the reference kernel.
//!
//! Max and Min propagate NaN as the reference does. Sums and products add in another order than the
//! reference's loop; the rest (Mean's division, L2's square root, LogSum's `libm` logarithm) is as the
//! reference computes it.

use ember_core::ops::nn::reduce::{self as reference, ReduceOp, ReduceParams};
use ember_core::ops::{In, Out};

use crate::simd::{fold, lanes, map_in_place, per_level, update, Operand, Scalar, Simd};

per_level! {
    fn reduce(p: &ReduceParams, x: In<'_>, y: Out<'_>) => reduce_on;
}

/// How lanes combine (the `C` parameter of [`reduce_with`]).
const ADD: u8 = 0;
const MUL: u8 = 1;
const MAX: u8 = 2;
const MIN: u8 = 3;
/// What is done to each value first (the `M` parameter).
const SAME: u8 = 0;
const ABS: u8 = 1;
const SQUARE: u8 = 2;

/// The last step on each output.
#[derive(Clone, Copy)]
enum Finish {
    None,
    /// Divide by the lane's length (Mean).
    Mean(f32),
    /// Square root (L2).
    Sqrt,
    /// Natural logarithm (LogSum).
    Log,
}

/// The first and last reduced axes, if `axes` (a bitmask) is one non-empty run of set bits.
fn axis_run(axes: u8) -> Option<(usize, usize)> {
    if axes == 0 {
        return None;
    }
    let (first, last) = (axes.trailing_zeros(), 7 - axes.leading_zeros());
    let run = ((1u16 << (last + 1)) - (1u16 << first)) as u8;
    (run == axes).then_some((first as usize, last as usize))
}

/// Whether [`reduce_on`] runs these parameters with its own loops (else it calls the reference).
pub(crate) fn is_vectorized(p: &ReduceParams) -> bool {
    p.op != ReduceOp::LogSumExp && axis_run(p.axes).is_some()
}

#[inline(always)]
fn reduce_on<S: Simd>(s: S, p: &ReduceParams, x: In<'_>, y: Out<'_>) {
    let Some((first, last)) = axis_run(p.axes).filter(|_| is_vectorized(p)) else {
        return reference::reduce(p, x, y);
    };
    if y.data.is_empty() {
        return;
    }
    let count: usize = x.dims[first..=last].iter().product();
    let inner: usize = x.dims[last + 1..].iter().product();
    let shape = (count, inner);
    let mean = Finish::Mean(count as f32);
    let (x, y) = (x.data, y.data);
    match p.op {
        ReduceOp::Sum => reduce_with::<S, ADD, SAME>(s, x, y, shape, 0.0, Finish::None),
        ReduceOp::Mean => reduce_with::<S, ADD, SAME>(s, x, y, shape, 0.0, mean),
        ReduceOp::Max => {
            reduce_with::<S, MAX, SAME>(s, x, y, shape, f32::NEG_INFINITY, Finish::None)
        }
        ReduceOp::Min => reduce_with::<S, MIN, SAME>(s, x, y, shape, f32::INFINITY, Finish::None),
        ReduceOp::Prod => reduce_with::<S, MUL, SAME>(s, x, y, shape, 1.0, Finish::None),
        ReduceOp::L1 => reduce_with::<S, ADD, ABS>(s, x, y, shape, 0.0, Finish::None),
        ReduceOp::L2 => reduce_with::<S, ADD, SQUARE>(s, x, y, shape, 0.0, Finish::Sqrt),
        ReduceOp::SumSquare => reduce_with::<S, ADD, SQUARE>(s, x, y, shape, 0.0, Finish::None),
        ReduceOp::LogSum => reduce_with::<S, ADD, SAME>(s, x, y, shape, 0.0, Finish::Log),
        // Not vectorized: sent to the reference above.
        ReduceOp::LogSumExp => {}
    }
}

/// `a` and `b` combined by `C` (Max and Min: NaN from either side, as the reference's fold).
#[inline(always)]
fn combine<T: Simd, const C: u8>(t: T, acc: T::V, v: T::V) -> T::V {
    match C {
        ADD => t.add(acc, v),
        MUL => t.mul(acc, v),
        MAX => t.select(t.or(t.lt(acc, v), t.is_nan(v)), v, acc),
        _ => t.select(t.or(t.lt(v, acc), t.is_nan(v)), v, acc),
    }
}

/// `v` prepared by `M`.
#[inline(always)]
fn prepare<T: Simd, const M: u8>(t: T, v: T::V) -> T::V {
    match M {
        ABS => t.abs(v),
        SQUARE => t.mul(v, v),
        _ => v,
    }
}

/// The reduction `C` of `M(x)` over `[outer, count, inner]` into `y` (`[outer, inner]`), from
/// `init` (the identity of `C`), then `finish`.
#[inline(always)]
fn reduce_with<S: Simd, const C: u8, const M: u8>(
    s: S,
    x: &[f32],
    y: &mut [f32],
    (count, inner): (usize, usize),
    init: f32,
    finish: Finish,
) {
    if count == 0 {
        y.fill(init);
    } else if inner == 1 {
        let step = |acc, v| combine::<S, C>(s, acc, prepare::<S, M>(s, v));
        let merge = |a, b| combine::<S, C>(s, a, b);
        for (out, lane) in y.iter_mut().zip(x.chunks_exact(count)) {
            let v = fold(s, lane, s.splat(init), init, step, merge);
            *out = lanes(s, v)[..S::LANES]
                .iter()
                .fold(init, |a, &b| combine::<Scalar, C>(Scalar, a, b));
        }
    } else {
        for (out, block) in y.chunks_exact_mut(inner).zip(x.chunks_exact(count * inner)) {
            out.fill(init);
            for row in block.chunks_exact(inner) {
                update(s, out, Operand::Run(row), |acc, v| {
                    combine::<S, C>(s, acc, prepare::<S, M>(s, v))
                });
            }
        }
    }
    match finish {
        Finish::None => {}
        Finish::Mean(n) => {
            let n = s.splat(n);
            map_in_place(s, y, |v| s.div(v, n));
        }
        Finish::Sqrt => map_in_place(s, y, |v| s.sqrt(v)),
        Finish::Log => y.iter_mut().for_each(|v| *v = libm::logf(*v)),
    }
}
