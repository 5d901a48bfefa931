//! Vectorized transcendental functions, written once over [`Simd`]: `exp`, `expm1`, `log`, `log1p`,
//! `sigmoid`, `tanh` and `erf`, from which the unary kernels build Gelu, Softplus, Mish, Swish, Elu and
//! the rest.
//!
//! Each reduces its argument to a small interval and evaluates a polynomial there; FMA is used where the
//! level has it, so results differ between levels in the last bit. Error bounds, in units in the last
//! place of the f32 result (2^-149 for subnormal results), over a sweep of two million inputs across
//! every binade of both signs against f64 (`tests/transcendental.rs` asserts the bound; "measured" is
//! the largest error seen there, with FMA (AVX2, NEON) / without (SSE2)):
//!
//! | function  | bound | measured    | where                                                         |
//! |-----------|-------|-------------|---------------------------------------------------------------|
//! | `exp`     | 2 ulp | 0.84 / 1.11 | all x; 0 below -103.97 and inf above 88.72, as the reference  |
//! | `log`     | 2 ulp | 0.84 / 0.84 | all x > 0, subnormals included; -inf at 0, NaN below, inf at inf |
//! | `sigmoid` | 3 ulp | 2.24 / 2.24 | x >= -88.7; below, `exp(-x)` overflows and the result is 0, as the reference's |
//! | `tanh`    | 3 ulp | 2.47 / 2.47 | all x                                                         |
//! | `erf`     | 3 ulp | 1.37 / 2.13 | all x                                                         |
//! | `expm1`   | 3 ulp | 1.10 / 1.18 | x <= 0 (what the kernels use; +inf above 88, see [`expm1`])   |
//! | `log1p`   | 3 ulp | 1.84 / 1.80 | x >= 0, through Softplus (`max(x, 0) + log1p(e^-abs(x))`)     |
//!
//! The unary ops built on them, measured the same way: Swish 1.97 ulp (bound 3), Mish 3.52 (bound 4,
//! and within FLT_MIN where e^x underflows), Gelu 1.74 and Gelu(tanh) 1.88 (bounds 3 and 4, plus
//! |x| 2^-22 for x < 0, where `1 + erf` and `1 + tanh` cancel as the reference computes them).
//!
//! NaN gives NaN everywhere; the clamps are written with [`Simd::min`] and [`Simd::max`] operands in
//! the order that passes NaN through.
//!
//! The erf coefficients come from `targets/cpu/tools/fit_erf.py`; the others are Taylor coefficients.

use super::Simd;

const LOG2_E: f32 = core::f32::consts::LOG2_E;
/// ln 2 split for Cody-Waite reduction: `LN2_HI` has 9 significant bits, so `n * LN2_HI` is exact for
/// every `|n| < 2^15`.
const LN2_HI: f32 = 355.0 / 512.0;
/// `ln 2 - LN2_HI`.
const LN2_LO: f32 = -0.000_212_194_44;

/// 1/k! for k = 0..=7: e^r on |r| <= ln(2)/2 to 5e-9 relative.
const EXP_TAYLOR: [f32; 8] = inverse_factorials(0);
/// 1/(k+1)! for k = 0..=7: (e^r - 1) / r on |r| <= ln(2)/2 to 6e-10 relative.
const EXPM1_TAYLOR: [f32; 8] = inverse_factorials(1);

/// `1 / (first + k)!` for k = 0..=7, each one f32 division of 1 by the factorial (exact in f32 up to
/// 8! = 40320).
const fn inverse_factorials(first: u32) -> [f32; 8] {
    let mut out = [0.0; 8];
    let mut k = 0;
    while k < 8 {
        let mut factorial = 1.0f32;
        let mut i = 2;
        while i <= first + k as u32 {
            factorial *= i as f32;
            i += 1;
        }
        out[k] = 1.0 / factorial;
        k += 1;
    }
    out
}
/// 2/(2k+3) for k = 0..=3: `log1p(f) = 2 atanh(s) = 2s + s z (2/3 + 2z/5 + ...)` with `z = s^2`,
/// `|s| <= 0.1716`: 2e-9 relative.
const LOG_ATANH: [f32; 4] = [2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0];

/// erf(x) / x as a polynomial in x^2, for |x| < [`ERF_SPLIT`] (fit_erf.py; the constant term is
/// 2/sqrt(pi) in f32).
const ERF_SMALL: [f32; 6] = [
    core::f32::consts::FRAC_2_SQRT_PI,
    -0.376_127_2,
    0.112_836_696,
    -0.026_826_961,
    0.005_077_806,
    -0.000_641_720_6,
];
/// Where erf switches from [`ERF_SMALL`] to `1 - exp(-x^2) Q(1/x)`.
const ERF_SPLIT: f32 = 0.875;
/// The centre of 1/x over `[ERF_SPLIT, 4]`, around which Q is expanded.
const ERFC_MID: f32 = 0.696_428_6;
/// Q(1/x - ERFC_MID) ~ erfc(x) exp(x^2) for x in `[ERF_SPLIT, 4]` (fit_erf.py).
const ERFC_LARGE: [f32; 11] = [
    0.332_395_9,
    0.358_354_27,
    -0.162_458_78,
    0.048_321_61,
    0.009_585_493,
    -0.030_926_226,
    0.030_698_445,
    -0.023_345_28,
    0.013_325_532,
    0.011_449_904,
    -0.023_431_163,
];

/// `c[0] + c[1] x + c[2] x^2 + ...` by Horner's rule.
#[inline(always)]
fn poly<S: Simd, const N: usize>(s: S, x: S::V, c: &[f32; N]) -> S::V {
    let mut p = s.splat(c[N - 1]);
    for &k in c[..N - 1].iter().rev() {
        p = s.mul_add(p, x, s.splat(k));
    }
    p
}

/// 2^n for n in the normal exponent range [-126, 127] (an exponent put in place).
#[inline(always)]
fn pow2<S: Simd>(s: S, n: S::I) -> S::V {
    s.bits_to_f32(s.shl_23(s.add_i(n, s.splat_i(127))))
}

/// `(n, r)` with `x = n ln 2 + r`, `|r| <= ln(2)/2` (a little more after rounding), `n` an integer.
#[inline(always)]
fn reduce_ln2<S: Simd>(s: S, x: S::V) -> (S::I, S::V) {
    let n = s.to_int(s.mul(x, s.splat(LOG2_E)));
    let nf = s.to_float(n);
    let r = s.mul_add(nf, s.splat(-LN2_HI), x);
    (n, s.mul_add(nf, s.splat(-LN2_LO), r))
}

/// e^x.
#[inline(always)]
pub(crate) fn exp<S: Simd>(s: S, x: S::V) -> S::V {
    // e^-104 is below half the smallest subnormal, e^88.8 above the largest f32.
    let x = s.min(s.splat(88.8), s.max(s.splat(-104.0), x));
    let (n, r) = reduce_ln2(s, x);
    let p = poly(s, r, &EXP_TAYLOR);
    // 2^n as 2^(n/2) 2^(n - n/2): both factors are normal for n in [-150, 128], so the first product
    // is exact and the second rounds once, into the subnormals or to infinity where it must.
    let half = s.shr_1(n);
    s.mul(s.mul(p, pow2(s, half)), pow2(s, s.sub_i(n, half)))
}

/// e^x - 1, accurate near 0. For x <= 88; larger x give +inf (the true value overflows from 88.72 on;
/// the kernels only ask for x <= 0, or select another branch above 0).
#[inline(always)]
pub(crate) fn expm1<S: Simd>(s: S, x: S::V) -> S::V {
    // Below -88, e^x - 1 rounds to -1 (2^n is then 0 here, which gives exactly that).
    let clamped = s.min(s.splat(88.0), s.max(s.splat(-88.0), x));
    let (n, r) = reduce_ln2(s, clamped);
    let q = s.mul(r, poly(s, r, &EXPM1_TAYLOR));
    // 2^n (e^r - 1) + (2^n - 1): for n = 0 just the polynomial, so small x keep their precision.
    let scale = pow2(s, n);
    let y = s.mul_add(scale, q, s.sub(scale, s.splat(1.0)));
    s.select(s.lt(s.splat(88.0), x), s.splat(f32::INFINITY), y)
}

/// Natural logarithm: -inf at ±0, NaN below 0, +inf at +inf.
#[inline(always)]
pub(crate) fn log<S: Simd>(s: S, x: S::V) -> S::V {
    // Subnormals scaled into the normal range first.
    let tiny = s.lt(x, s.splat(f32::MIN_POSITIVE));
    let x_normal = s.select(tiny, s.mul(x, s.splat(8_388_608.0)), x);
    let bits = s.to_bits(x_normal);
    // x = m 2^e with m in [1, 2); then m in [sqrt(1/2), sqrt(2)) by halving the larger ones.
    let e = s.sub_i(s.shr_23(bits), s.splat_i(127));
    let m = s.bits_to_f32(s.add_i(
        s.and_i(bits, s.splat_i(0x007f_ffff)),
        s.splat_i(0x3f80_0000),
    ));
    let halve = s.lt(s.splat(core::f32::consts::SQRT_2), m);
    let m = s.select(halve, s.mul(m, s.splat(0.5)), m);
    let zero = s.splat(0.0);
    let e = s.add(
        s.to_float(e),
        s.sub(
            s.select(halve, s.splat(1.0), zero),
            s.select(tiny, s.splat(23.0), zero),
        ),
    );
    // log(m) = log1p(f) = f - s (f - R), the atanh series rearranged so that f (exact) leads.
    let f = s.sub(m, s.splat(1.0));
    let t = s.div(f, s.add(f, s.splat(2.0)));
    let z = s.mul(t, t);
    let r = s.mul(z, poly(s, z, &LOG_ATANH));
    let log_m = s.sub(f, s.mul(t, s.sub(f, r)));
    let y = s.mul_add(e, s.splat(LN2_HI), s.mul_add(e, s.splat(LN2_LO), log_m));
    let y = s.select(s.eq(x, s.splat(f32::INFINITY)), x, y);
    let y = s.select(s.eq(x, zero), s.splat(f32::NEG_INFINITY), y);
    let undefined = s.or(s.lt(x, zero), s.is_nan(x));
    s.select(undefined, s.splat(f32::NAN), y)
}

/// ln(1 + x) for x >= 0, accurate near 0.
#[inline(always)]
pub(crate) fn log1p<S: Simd>(s: S, x: S::V) -> S::V {
    let one = s.splat(1.0);
    let u = s.add(one, x);
    // `u - 1` is exact, so `x - (u - 1)` is what rounding `1 + x` lost; log(u + lost) ~ log(u) + lost/u.
    let lost = s.sub(x, s.sub(u, one));
    s.add(log(s, u), s.div(lost, u))
}

/// 1 / (1 + e^-x), as the reference writes it.
#[inline(always)]
pub(crate) fn sigmoid<S: Simd>(s: S, x: S::V) -> S::V {
    let one = s.splat(1.0);
    s.div(one, s.add(one, exp(s, s.neg(x))))
}

/// Hyperbolic tangent.
#[inline(always)]
pub(crate) fn tanh<S: Simd>(s: S, x: S::V) -> S::V {
    // tanh(|x|) = -t / (t + 2) with t = e^(-2|x|) - 1 in (-1, 0]: no cancellation anywhere. From 10 on,
    // tanh rounds to 1.
    let a = s.min(s.splat(10.0), s.abs(x));
    let t = expm1(s, s.mul(s.splat(-2.0), a));
    let y = s.div(s.neg(t), s.add(t, s.splat(2.0)));
    s.copysign(y, x)
}

/// The error function.
#[inline(always)]
pub(crate) fn erf<S: Simd>(s: S, x: S::V) -> S::V {
    // From 4 on, erf rounds to 1.
    let a = s.min(s.splat(4.0), s.abs(x));
    let z = s.mul(a, a);
    // a (c0 + z P1(z)) as a c0 + (a z) P1(z): the leading term rounds once (with FMA).
    let [c0, rest @ ..] = ERF_SMALL;
    let small = s.mul_add(a, s.splat(c0), s.mul(s.mul(a, z), poly(s, z, &rest)));
    // 1/a is inf at 0: that lane takes `small`.
    let u = s.sub(s.div(s.splat(1.0), a), s.splat(ERFC_MID));
    let erfc = s.mul(exp(s, s.neg(z)), poly(s, u, &ERFC_LARGE));
    let large = s.sub(s.splat(1.0), erfc);
    let y = s.select(s.lt(a, s.splat(ERF_SPLIT)), small, large);
    s.copysign(y, x)
}
