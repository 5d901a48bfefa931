//! Element-wise kernels: the unary ops (one kernel, the op chosen by a code), broadcasting binary ops,
//! and the fused activation every producing kernel applies to its result.
//!
//! The scalar formulas follow `ember_core::ops::math` one for one (same NaN handling, `Round` half to
//! even, `Clip` lower bound first), so that results stay within 1e-4 of the reference kernels.

use cubecl::prelude::*;

use super::MAX_RANK;

/// `min(max(x, lo), hi)` with the lower bound applied first; NaN passes through (ONNX `Clip`).
#[cube]
pub(crate) fn clip(x: f32, lo: f32, hi: f32) -> f32 {
    let mut v = x;
    if v < lo {
        v = lo;
    }
    if v > hi {
        v = hi;
    }
    v
}

/// The fused activation: `act == 0` is the identity, anything else a clip to `[lo, hi]`
/// (Relu is `[0, inf]`, Relu6 `[0, 6]`).
#[cube]
pub(crate) fn activate(x: f32, act: u32, lo: f32, hi: f32) -> f32 {
    let mut v = x;
    if act != 0 {
        v = clip(x, lo, hi);
    }
    v
}

/// Rounds half to even (ONNX `Round`, libm `rintf`).
#[cube]
fn round_even(v: f32) -> f32 {
    let f = v.floor();
    let d = v - f;
    let mut r = f;
    if d > 0.5 {
        r = f + 1.0;
    }
    if d == 0.5 {
        let half = f * 0.5;
        if half.floor() != half {
            r = f + 1.0;
        }
    }
    r
}

/// tanh with its relative precision kept near 0, where a driver's `tanh` may be (e^2v - 1) / (e^2v
/// + 1) and lose it (lavapipe: 1.7e-3 relative error at 4.5e-4): the odd Taylor series to v^9 below
/// |v| = 1/16 (its next term is under 1e-12 relative there), the driver's above.
#[cube]
pub(crate) fn tanh_precise(v: f32) -> f32 {
    let mut r = v.tanh();
    if v.abs() < 0.0625 {
        let s = v * v;
        // 1 - s/3 + 2s^2/15 - 17s^3/315 + 62s^4/2835.
        let p = -0.053_968_254f32 + s * 0.021_869_488f32;
        let p = 0.133_333_33f32 + s * p;
        let p = -0.333_333_34f32 + s * p;
        r = v * (1.0f32 + s * p);
    }
    r
}

#[cube]
fn softplus(v: f32) -> f32 {
    let mut r = (v.exp()).log1p();
    if v > 0.0 {
        r = v + ((-v).exp()).log1p();
    }
    r
}

numbered! {
    /// Unary op codes (`UnaryOp` in ember-core); `a` and `b` carry the op's parameters.
    pub(crate) mod code: u32 {
        RELU, CLIP, SIGMOID, TANH, ABS, NEG, SQRT, EXP, LOG, ERF, GELU, GELU_TANH, FLOOR,
        CEIL, ROUND, RECIPROCAL, LEAKY_RELU, HARD_SIGMOID, HARD_SWISH, ELU, SELU, SOFTPLUS,
        SOFTSIGN, SIGN, SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH,
        CELU, THRESHOLDED_RELU, MISH, SHRINK, SWISH, SCALED_HARD_SWISH,
    }
}

/// One unary op applied to `v`.
#[cube]
fn unary_value(v: f32, op: u32, a: f32, b: f32) -> f32 {
    let mut r = v;
    if op == 0 {
        r = clip(v, 0.0, f32::new(f32::INFINITY));
    } else if op == 1 {
        r = clip(v, a, b);
    } else if op == 2 {
        r = 1.0 / (1.0 + (-v).exp());
    } else if op == 3 {
        r = tanh_precise(v);
    } else if op == 4 {
        r = v.abs();
    } else if op == 5 {
        r = -v;
    } else if op == 6 {
        r = v.sqrt();
    } else if op == 7 {
        r = v.exp();
    } else if op == 8 {
        r = v.ln();
    } else if op == 9 {
        r = Erf::erf(v);
    } else if op == 10 {
        r = 0.5 * v * (1.0 + Erf::erf(v * 0.707_106_77f32));
    } else if op == 11 {
        r = 0.5 * v * (1.0 + (0.797_884_6f32 * (v + 0.044_715f32 * v * v * v)).tanh());
    } else if op == 12 {
        r = v.floor();
    } else if op == 13 {
        r = v.ceil();
    } else if op == 14 {
        r = round_even(v);
    } else if op == 15 {
        r = 1.0 / v;
    } else if op == 16 {
        if v < 0.0 {
            r = a * v;
        }
    } else if op == 17 {
        r = clip(a * v + b, 0.0, 1.0);
    } else if op == 18 {
        r = v * clip(v / 6.0 + 0.5, 0.0, 1.0);
    } else if op == 19 {
        if v < 0.0 {
            r = a * v.exp_m1();
        }
    } else if op == 20 {
        r = b * v;
        if v <= 0.0 {
            r = b * a * v.exp_m1();
        }
    } else if op == 21 {
        r = softplus(v);
    } else if op == 22 {
        r = v / (1.0 + v.abs());
    } else if op == 23 {
        if v > 0.0 {
            r = 1.0f32;
        } else if v < 0.0 {
            r = -1.0f32;
        }
    } else if op == 24 {
        r = v.sin();
    } else if op == 25 {
        r = v.cos();
    } else if op == 26 {
        r = v.tan();
    } else if op == 27 {
        // Through atan: lavapipe's asin and acos are only good to about 1e-4.
        r = (v / ((1.0 - v) * (1.0 + v)).sqrt()).atan();
    } else if op == 28 {
        r = 2.0 * ((1.0 - v) / (1.0 + v)).sqrt().atan();
    } else if op == 29 {
        r = v.atan();
    } else if op == 30 {
        r = v.sinh();
    } else if op == 31 {
        r = v.cosh();
    } else if op == 32 {
        r = v.asinh();
    } else if op == 33 {
        r = v.acosh();
    } else if op == 34 {
        r = v.atanh();
    } else if op == 35 {
        if v < 0.0 {
            r = a * (v / a).exp_m1();
        }
    } else if op == 36 {
        if !(v > a || v.is_nan()) {
            r = 0.0f32;
        }
    } else if op == 37 {
        // tanh(softplus(v)) as the rational n / (n + 2), n = e^v (e^v + 2): exact algebra, and no
        // tanh of a tiny argument, which a driver may compute as (e^2s - 1) / (e^2s + 1) and lose
        // (lavapipe: 1.7e-3 relative error at v = -8). Past v = 20 it is 1 in f32 (and n overflows).
        let e = v.exp();
        let n = e * (e + 2.0);
        r = v * (n / (n + 2.0));
        if v > 20.0 {
            r = v;
        }
    } else if op == 38 {
        // a = bias, b = lambd.
        if v < -b {
            r = v + a;
        } else if v > b {
            r = v - a;
        } else if !v.is_nan() {
            r = 0.0f32;
        }
    } else if op == 39 {
        r = v / (1.0 + (-a * v).exp());
    } else if op == 40 {
        r = v * clip(v / 6.0 + 0.5, 0.0, 1.0) * a + b;
    }
    r
}

/// `y[i] = op(x[i])`.
#[cube(launch)]
pub(crate) fn unary(x: &[f32], y: &mut [f32], op: u32, a: f32, b: f32) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        y[pos] = unary_value(x[pos], op, a, b);
    }
}

numbered! {
    /// Binary op codes (`BinaryOp` in ember-core).
    pub(crate) mod binary_code: u32 {
        ADD, SUB, MUL, DIV, POW, MIN, MAX, PRELU, MOD, FLOOR_MOD,
    }
}

/// `powf` with C's rules where SPIR-V's `Pow` is undefined: negative bases with whole exponents, and
/// zero bases.
#[cube]
fn pow(u: f32, v: f32) -> f32 {
    let mut r = u.powf(v);
    if v == 0.0 || u == 1.0 {
        r = 1.0f32;
    } else if u == 0.0 {
        r = 0.0f32;
        if v < 0.0 {
            r = f32::new(f32::INFINITY);
        }
    } else if u < 0.0 {
        let m = (-u).powf(v);
        if v.floor() == v {
            let half = v * 0.5;
            r = m;
            if half.floor() != half {
                r = -m;
            }
        } else {
            r = f32::new(f32::NAN);
        }
    }
    r
}

/// C's `fmodf`: the remainder of `u / v` with the sign of `u`.
#[cube]
fn fmod(u: f32, v: f32) -> f32 {
    let av = v.abs();
    let au = u.abs();
    let mut r = au - (au / av).floor() * av;
    if r >= av {
        r -= av;
    }
    if r < 0.0 {
        r += av;
    }
    if u < 0.0 {
        r = -r;
    }
    r
}

#[cube]
fn binary_value(u: f32, v: f32, op: u32) -> f32 {
    let mut r = u + v;
    if op == 1 {
        r = u - v;
    } else if op == 2 {
        r = u * v;
    } else if op == 3 {
        r = u / v;
    } else if op == 4 {
        r = pow(u, v);
    } else if op == 5 {
        r = v;
        if u < v || u.is_nan() {
            r = u;
        }
    } else if op == 6 {
        r = v;
        if u > v || u.is_nan() {
            r = u;
        }
    } else if op == 7 {
        r = u;
        if u < 0.0 {
            r = v * u;
        }
    } else if op == 8 {
        r = fmod(u, v);
    } else if op == 9 {
        // The sign of `v` (Python's `%`).
        r = fmod(u, v);
        if (r < 0.0 && v > 0.0) || (r > 0.0 && v < 0.0) {
            r += v;
        }
    }
    r
}

/// Where element `index` of a broadcast over `rank` dims reads its two operands: `meta[at..]` holds the
/// dims (`MAX_RANK` of them), then the first operand's strides, then the second's, right-aligned, a
/// stride 0 on a broadcast axis. Returns the two offsets.
#[cube]
pub(crate) fn broadcast_offsets(
    meta: &[u32],
    at: usize,
    rank: usize,
    index: usize,
) -> (usize, usize) {
    let mut rem = index;
    let mut a_at = 0usize;
    let mut b_at = 0usize;
    for i in 0..rank {
        let d = rank - 1 - i;
        let dim = meta[at + d] as usize;
        let idx = rem % dim;
        rem /= dim;
        a_at += idx * meta[at + MAX_RANK + d] as usize;
        b_at += idx * meta[at + 2 * MAX_RANK + d] as usize;
    }
    (a_at, b_at)
}

/// `y = act(a op b)` with numpy broadcasting. `meta` is `[rank, y dims (6), a strides (6), b strides
/// (6)]`, right-aligned, a stride 0 on a broadcast axis.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn binary(
    a: &[f32],
    b: &[f32],
    y: &mut [f32],
    meta: &[u32],
    op: u32,
    act: u32,
    lo: f32,
    hi: f32,
) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let (a_at, b_at) = broadcast_offsets(meta, 1usize, meta[0] as usize, pos);
        y[pos] = activate(binary_value(a[a_at], b[b_at], op), act, lo, hi);
    }
}
