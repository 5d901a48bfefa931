//! Error sweeps of the vectorized transcendental functions, through each supported level's unary
//! kernel (the scalar table keeps the reference's, so there the sweep checks `libm`), against f64: about two million inputs per function spread over every binade of both
//! signs, plus the special values. The bounds asserted here are the ones stated in `src/simd/math.rs`.
//!
//! Error is measured in units in the last place of the f32 nearest the exact result (for subnormal
//! results, 2^-149). Functions whose definition cancels (Gelu, GeluTanh, and Elu/Selu/Celu through
//! their `alpha (e^x - 1)`) are also allowed an absolute error, stated per function.

use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::ops::{In, Out};
use ember_cpu::{table, Isa};

/// Every 2039th f32 bit pattern of each sign (finite ones), and the special values.
fn sweep() -> Vec<f32> {
    let mut xs: Vec<f32> = (0..0x7f80_0000u32)
        .step_by(2039)
        .flat_map(|bits| [f32::from_bits(bits), -f32::from_bits(bits)])
        .collect();
    xs.extend([
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::EPSILON,
        1.0,
        -1.0,
    ]);
    xs
}

/// Runs `op` over `xs` with the unary kernel of `isa`.
fn run(isa: Isa, op: UnaryOp, xs: &[f32]) -> Vec<f32> {
    let mut ys = vec![0.0; xs.len()];
    let dims = [xs.len()];
    (table(isa).unary)(
        &UnaryParams { op },
        In {
            data: xs,
            dims: &dims,
        },
        Out {
            data: &mut ys,
            dims: &dims,
        },
    );
    ys
}

/// The unit in the last place of f32 at magnitude `v` (2^-149 below the normal range).
fn ulp(v: f64) -> f64 {
    let v = v.abs().max(f64::from(f32::MIN_POSITIVE));
    2f64.powi(v.log2().floor() as i32 - 23)
}

/// Error of `got` against the exact `want`, in ulps of `want`, after forgiving `slack` absolutely: 0
/// when both are the same infinity or both NaN; infinite when only one is NaN or infinite (an f32
/// infinity matches any exact value beyond `f32::MAX`).
fn ulps(got: f32, want: f64, slack: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if got.is_infinite() {
        let beyond = want.abs() > f64::from(f32::MAX);
        let same_sign = (want > 0.0) == (got > 0.0);
        return if beyond && same_sign {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let err = ((f64::from(got) - want).abs() - slack).max(0.0);
    err / ulp(want)
}

/// The largest error of `op` over `xs` at `isa` and where it occurs, against `exact` with absolute
/// slack `slack(x)`.
fn worst(
    isa: Isa,
    op: UnaryOp,
    xs: &[f32],
    exact: impl Fn(f64) -> f64,
    slack: impl Fn(f64) -> f64,
) -> (f64, f32) {
    let ys = run(isa, op, xs);
    let mut worst = (0.0, 0.0f32);
    for (&x, &y) in xs.iter().zip(&ys) {
        let x64 = f64::from(x);
        let e = ulps(y, exact(x64), slack(x64));
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    worst
}

/// Asserts `op`'s error over `xs` (filtered by `domain`) is within `bound` ulps at every level.
fn check(
    op: UnaryOp,
    bound: f64,
    domain: impl Fn(f32) -> bool,
    exact: impl Fn(f64) -> f64,
    slack: impl Fn(f64) -> f64,
) {
    let xs: Vec<f32> = sweep().into_iter().filter(|&x| domain(x)).collect();
    for isa in Isa::supported() {
        let (err, at) = worst(isa, op, &xs, &exact, &slack);
        eprintln!("{isa:>12} {:<12} max {err:.3} ulp at x = {at:e}", op.name());
        assert!(
            err <= bound,
            "{isa}: {} is {err} ulp off at x = {at:e} (bound {bound})",
            op.name()
        );
    }
}

fn all(_: f32) -> bool {
    true
}

fn none(_: f64) -> f64 {
    0.0
}

/// erf in f64: `libm`'s double erf (std has none), accurate to about 1 ulp of f64.
fn erf(x: f64) -> f64 {
    libm::erf(x)
}

#[test]
fn exp_within_2_ulp() {
    check(UnaryOp::Exp, 2.0, all, f64::exp, none);
}

#[test]
fn log_within_2_ulp() {
    check(UnaryOp::Log, 2.0, all, f64::ln, none);
}

#[test]
fn sigmoid_within_3_ulp_where_exp_of_minus_x_is_finite() {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    check(UnaryOp::Sigmoid, 3.0, |x| x >= -88.7, sigmoid, none);
    // Below, e^-x overflows and the result is 0 (the reference's too): off by less than FLT_MIN.
    let below = |x: f32| x < -88.7;
    check(UnaryOp::Sigmoid, 0.0, below, sigmoid, |_| {
        f64::from(f32::MIN_POSITIVE)
    });
}

#[test]
fn tanh_within_3_ulp() {
    check(UnaryOp::Tanh, 3.0, all, f64::tanh, none);
}

#[test]
fn erf_within_3_ulp() {
    check(UnaryOp::Erf, 3.0, all, erf, none);
}

#[test]
fn expm1_within_3_ulp_below_zero() {
    // Elu with alpha 1 is e^x - 1 below 0 (times 1, exactly).
    check(
        UnaryOp::Elu { alpha: 1.0 },
        3.0,
        |x| x <= 0.0,
        f64::exp_m1,
        none,
    );
}

#[test]
fn softplus_within_3_ulp() {
    let softplus = |x: f64| {
        if x > 0.0 {
            x + (-x).exp().ln_1p()
        } else {
            x.exp().ln_1p()
        }
    };
    check(UnaryOp::Softplus, 3.0, all, softplus, none);
}

#[test]
fn mish_within_4_ulp_and_flt_min_below() {
    let mish = |x: f64| {
        let softplus = if x > 0.0 {
            x + (-x).exp().ln_1p()
        } else {
            x.exp().ln_1p()
        };
        x * softplus.tanh()
    };
    // From x = -104 on e^x is 0 (as the reference's `expf`), and so is the result: off by less than
    // FLT_MIN.
    check(UnaryOp::Mish, 4.0, all, mish, |_| {
        f64::from(f32::MIN_POSITIVE)
    });
}

#[test]
fn swish_within_3_ulp_where_exp_is_finite() {
    let swish = |x: f64| x / (1.0 + (-x).exp());
    check(
        UnaryOp::Swish { alpha: 1.0 },
        3.0,
        |x| x >= -88.7,
        swish,
        none,
    );
}

#[test]
fn gelu_within_3_ulp_and_its_cancellation() {
    // `1 + erf(x / sqrt 2)` and `1 + tanh(..)` cancel for negative x, as the reference computes them:
    // the error of erf or tanh near -1 (a few ulp of 1) times |x| / 2 comes with the formula.
    let gelu = |x: f64| 0.5 * x * (1.0 + erf(x / 2f64.sqrt()));
    let cancellation = |x: f64| {
        if x < 0.0 {
            x.abs() * 2f64.powi(-22)
        } else {
            0.0
        }
    };
    check(UnaryOp::Gelu, 3.0, all, gelu, cancellation);
    let gelu_tanh = |x: f64| {
        let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3));
        0.5 * x * (1.0 + inner.tanh())
    };
    check(UnaryOp::GeluTanh, 4.0, all, gelu_tanh, cancellation);
}
