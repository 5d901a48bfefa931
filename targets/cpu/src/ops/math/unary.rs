//! Element-wise unary ops: every `UnaryOp` that models use is vectorized; the trigonometric and
//! inverse hyperbolic functions (rare in models) run the reference kernel.
//!
//! The ops made of comparisons and IEEE arithmetic (Relu, Relu6, Clip, LeakyRelu, HardSigmoid,
//! HardSwish, ScaledHardSwish, Abs, Neg, Sqrt, Reciprocal, Floor, Ceil, Round, Softsign, Sign,
//! ThresholdedRelu, Shrink)
//! give the reference's bits, NaN and signed zeros included: each is written as the reference writes
//! it, in the same order, without FMA. The four cheapest (Relu, Relu6, Clip, LeakyRelu) are the
//! reference's own scalar formulas in a plain loop that the compiler vectorizes for the level: as fast
//! as explicit vectors on a memory-bound op, with less work per block. The others go through [`crate::simd::math`], within the error
//! bounds stated there (composites such as Gelu add a rounding or two to those of their parts).

use ember_core::ops::math::activation::{self, relu};
use ember_core::ops::math::unary::{self as reference, UnaryOp, UnaryParams};
use ember_core::ops::{In, Out};

use crate::simd::math::{erf, exp, expm1, log, log1p, sigmoid, tanh};
use crate::simd::{map, per_level, Simd};

per_level! {
    simd:
    fn unary(p: &UnaryParams, x: In<'_>, y: Out<'_>) => unary_on;
}

/// The pattern of the ops [`unary_on`] hands to the reference kernel (no vector code).
macro_rules! reference_only {
    () => {
        UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Asin
            | UnaryOp::Acos
            | UnaryOp::Atan
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Asinh
            | UnaryOp::Acosh
            | UnaryOp::Atanh
    };
}

/// Whether [`unary_on`] runs `op` with vector code (else it calls the reference kernel).
pub(crate) fn is_vectorized(op: &UnaryOp) -> bool {
    !matches!(op, reference_only!())
}

/// `y = op(x)` element-wise on level `s`.
#[inline(always)]
fn unary_on<S: Simd>(s: S, p: &UnaryParams, x: In<'_>, y: Out<'_>) {
    let (xs, ys) = (x.data, &mut *y.data);
    let c = |v: f32| s.splat(v);
    let (zero, one) = (c(0.0), c(1.0));
    // The reference's `clip`: the lower bound first, so that `lo > hi` gives `hi`; NaN passes.
    let clip = |v, lo, hi| s.min(hi, s.max(lo, v));
    match p.op {
        UnaryOp::Relu => plain(xs, ys, relu),
        UnaryOp::Relu6 => plain(xs, ys, |v| activation::clip(v, 0.0, 6.0)),
        UnaryOp::Clip { min, max } => plain(xs, ys, |v| activation::clip(v, min, max)),
        UnaryOp::Sigmoid => map(s, xs, ys, |v| sigmoid(s, v)),
        UnaryOp::Tanh => map(s, xs, ys, |v| tanh(s, v)),
        UnaryOp::Abs => map(s, xs, ys, |v| s.abs(v)),
        UnaryOp::Neg => map(s, xs, ys, |v| s.neg(v)),
        UnaryOp::Sqrt => map(s, xs, ys, |v| s.sqrt(v)),
        UnaryOp::Exp => map(s, xs, ys, |v| exp(s, v)),
        UnaryOp::Log => map(s, xs, ys, |v| log(s, v)),
        UnaryOp::Erf => map(s, xs, ys, |v| erf(s, v)),
        UnaryOp::Gelu => map(s, xs, ys, |v| {
            let e = erf(s, s.mul(v, c(core::f32::consts::FRAC_1_SQRT_2)));
            s.mul(s.mul(c(0.5), v), s.add(one, e))
        }),
        UnaryOp::GeluTanh => map(s, xs, ys, |v| {
            // sqrt(2 / pi), and the cube as the reference rounds it: ((0.044715 v) v) v.
            let cube = s.mul(s.mul(s.mul(c(0.044_715), v), v), v);
            let t = tanh(s, s.mul(c(0.797_884_6), s.add(v, cube)));
            s.mul(s.mul(c(0.5), v), s.add(one, t))
        }),
        UnaryOp::Floor => map(s, xs, ys, |v| s.floor(v)),
        UnaryOp::Ceil => map(s, xs, ys, |v| s.ceil(v)),
        UnaryOp::Round => map(s, xs, ys, |v| s.round(v)),
        UnaryOp::Reciprocal => map(s, xs, ys, |v| s.div(one, v)),
        UnaryOp::LeakyRelu { alpha } => map(s, xs, ys, |v| {
            s.select(s.lt(v, zero), s.mul(c(alpha), v), v)
        }),
        UnaryOp::HardSigmoid { alpha, beta } => map(s, xs, ys, |v| {
            clip(s.add(s.mul(c(alpha), v), c(beta)), zero, one)
        }),
        UnaryOp::HardSwish => map(s, xs, ys, |v| {
            s.mul(v, clip(s.add(s.div(v, c(6.0)), c(0.5)), zero, one))
        }),
        UnaryOp::ScaledHardSwish { scale, offset } => map(s, xs, ys, |v| {
            let hard_swish = s.mul(v, clip(s.add(s.div(v, c(6.0)), c(0.5)), zero, one));
            s.add(s.mul(hard_swish, c(scale)), c(offset))
        }),
        UnaryOp::Elu { alpha } => map(s, xs, ys, |v| {
            s.select(s.lt(v, zero), s.mul(c(alpha), expm1(s, v)), v)
        }),
        UnaryOp::Selu { alpha, gamma } => map(s, xs, ys, |v| {
            let below = s.mul(c(gamma * alpha), expm1(s, v));
            s.select(s.le(v, zero), below, s.mul(c(gamma), v))
        }),
        UnaryOp::Softplus => map(s, xs, ys, |v| softplus(s, v)),
        UnaryOp::Softsign => map(s, xs, ys, |v| s.div(v, s.add(one, s.abs(v)))),
        // 0, -0 and NaN are their own sign.
        UnaryOp::Sign => map(s, xs, ys, |v| {
            let negative = s.select(s.lt(v, zero), c(-1.0), v);
            s.select(s.lt(zero, v), one, negative)
        }),
        UnaryOp::Celu { alpha } => map(s, xs, ys, |v| {
            let below = s.mul(c(alpha), expm1(s, s.div(v, c(alpha))));
            s.select(s.lt(v, zero), below, v)
        }),
        UnaryOp::ThresholdedRelu { alpha } => map(s, xs, ys, |v| {
            s.select(s.or(s.lt(c(alpha), v), s.is_nan(v)), v, zero)
        }),
        UnaryOp::Mish => map(s, xs, ys, |v| mish(s, v)),
        UnaryOp::Shrink { bias, lambd } => map(s, xs, ys, |v| {
            let inside = s.select(s.is_nan(v), v, zero);
            let above = s.select(s.lt(c(lambd), v), s.sub(v, c(bias)), inside);
            s.select(s.lt(v, c(-lambd)), s.add(v, c(bias)), above)
        }),
        UnaryOp::Swish { alpha } => map(s, xs, ys, |v| {
            s.div(v, s.add(one, exp(s, s.mul(c(-alpha), v))))
        }),
        reference_only!() => reference::unary(p, x, y),
    }
}

/// `y[i] = f(x[i])` as a plain loop, which the compiler vectorizes for the level it is inlined into
/// (this function and `f` are inlined into the level's entry): for the ops that are a compare and a
/// select or two, as fast as explicit vectors and with less per-block work.
#[inline(always)]
fn plain(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    for (out, &v) in y.iter_mut().zip(x) {
        *out = f(v);
    }
}

/// ln(1 + e^v) = max(v, 0) + ln(1 + e^-|v|), as the reference splits it (no overflow for large v).
#[inline(always)]
fn softplus<S: Simd>(s: S, v: S::V) -> S::V {
    let tail = log1p(s, exp(s, s.neg(s.abs(v))));
    s.select(s.lt(s.splat(0.0), v), s.add(v, tail), tail)
}

/// v tanh(ln(1 + e^v)) = v n / (n + 2) with n = e^v (e^v + 2): one exponential, no cancellation.
#[inline(always)]
fn mish<S: Simd>(s: S, v: S::V) -> S::V {
    // From v = 20 on, n / (n + 2) rounds to 1 (and e^2v would overflow from 44 on); NaN passes.
    let e = exp(s, s.min(s.splat(20.0), v));
    let n = s.mul(e, s.add(e, s.splat(2.0)));
    s.mul(v, s.div(n, s.add(n, s.splat(2.0))))
}
