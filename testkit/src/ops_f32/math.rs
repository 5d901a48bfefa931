//! Element-wise kernels: unary ops and broadcasting binary ops.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{self, BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{self, UnaryOp, UnaryParams};
use ember_core::ops::{In, Out};
use ember_core::{Error, Kernels};
use proptest::collection::vec;
use proptest::prelude::*;

use super::{activate, activation, assert_close, assert_known, dim, numel, unflat, values, Want};
use crate::shape::run_into;
use crate::shape::{broadcast_operand, broadcast_shape, broadcast_source};

// ---------------------------------------------------------------------------------------------- unary

/// A unary op over a tensor.
#[derive(Clone, Debug)]
pub struct UnaryCase {
    p: UnaryParams,
    dims: Vec<usize>,
    x: Vec<f32>,
}

/// Every unary op, with parameters drawn where it has them (Clip bounds possibly crossed).
pub fn unary_op() -> impl Strategy<Value = UnaryOp> {
    let plain = proptest::sample::select(vec![
        UnaryOp::Relu,
        UnaryOp::Relu6,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Abs,
        UnaryOp::Neg,
        UnaryOp::Sqrt,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Erf,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Reciprocal,
        UnaryOp::HardSwish,
        UnaryOp::Softplus,
        UnaryOp::Softsign,
        UnaryOp::Sign,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Mish,
    ]);
    let p = || -3.0f32..3.0;
    prop_oneof![
        8 => plain,
        1 => (-5.0f32..5.0, -5.0f32..5.0).prop_map(|(min, max)| UnaryOp::Clip { min, max }),
        1 => p().prop_map(|alpha| UnaryOp::LeakyRelu { alpha }),
        1 => (p(), p()).prop_map(|(alpha, beta)| UnaryOp::HardSigmoid { alpha, beta }),
        1 => p().prop_map(|alpha| UnaryOp::Elu { alpha }),
        1 => (p(), p()).prop_map(|(alpha, gamma)| UnaryOp::Selu { alpha, gamma }),
        1 => (0.1f32..3.0).prop_map(|alpha| UnaryOp::Celu { alpha }),
        1 => (-5.0f32..5.0).prop_map(|alpha| UnaryOp::ThresholdedRelu { alpha }),
        1 => (p(), 0.0f32..3.0).prop_map(|(bias, lambd)| UnaryOp::Shrink { bias, lambd }),
        1 => p().prop_map(|alpha| UnaryOp::Swish { alpha }),
        1 => (p(), p()).prop_map(|(scale, offset)| UnaryOp::ScaledHardSwish { scale, offset }),
    ]
}

/// Any unary op, rank 0 to 4; values in -10..10, or in -1.5..1.5 for the ops defined on [-1, 1] (so
/// that both sides of the domain's edge are hit).
pub fn unary_case() -> impl Strategy<Value = UnaryCase> {
    (unary_op(), vec(dim(), 0..=4))
        .prop_flat_map(|(op, dims)| {
            let n = numel(&dims);
            let x = match op {
                UnaryOp::Asin | UnaryOp::Acos | UnaryOp::Atanh => vec(-1.5f32..1.5, n).boxed(),
                _ => values(n).boxed(),
            };
            (Just(UnaryParams { op }), Just(dims), x)
        })
        .prop_map(|(p, dims, x)| UnaryCase { p, dims, x })
}

/// The error function by its Maclaurin series (|x| <= 4; beyond, erf is ±1 to within 2e-8).
fn erf(x: f64) -> f64 {
    if x.abs() > 4.0 {
        return x.signum();
    }
    let mut term = x; // (-1)^n x^(2n+1) / n!
    let mut sum = x;
    for n in 1..200 {
        term *= -x * x / f64::from(n);
        sum += term / f64::from(2 * n + 1);
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

/// Round half to even, by cases.
fn round_half_even(v: f64) -> f64 {
    let floor = v.floor();
    let frac = v - floor;
    if frac < 0.5 {
        floor
    } else if frac > 0.5 {
        floor + 1.0
    } else if floor % 2.0 == 0.0 {
        floor
    } else {
        floor + 1.0
    }
}

/// The unary functions, written out in f64.
fn unary_definition(op: UnaryOp, v: f64) -> f64 {
    let clip = |min: f64, max: f64| {
        super::activation_definition(
            Activation::Clip {
                min: min as f32,
                max: max as f32,
            },
            v,
        )
    };
    if v.is_nan() {
        return v;
    }
    let softplus = |v: f64| (1.0 + v.exp()).ln();
    match op {
        UnaryOp::Relu => {
            if v > 0.0 {
                v
            } else {
                0.0
            }
        }
        UnaryOp::Relu6 => clip(0.0, 6.0),
        UnaryOp::Clip { min, max } => clip(f64::from(min), f64::from(max)),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-v).exp()),
        UnaryOp::Tanh => v.tanh(),
        UnaryOp::Abs => v.abs(),
        UnaryOp::Neg => -v,
        UnaryOp::Sqrt => v.sqrt(),
        UnaryOp::Exp => v.exp(),
        UnaryOp::Log => v.ln(),
        UnaryOp::Erf => erf(v),
        UnaryOp::Gelu => v * 0.5 * (1.0 + erf(v / 2f64.sqrt())),
        UnaryOp::GeluTanh => {
            let inner = (2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3));
            v * 0.5 * (1.0 + inner.tanh())
        }
        UnaryOp::Floor => v.floor(),
        UnaryOp::Ceil => v.ceil(),
        UnaryOp::Round => round_half_even(v),
        UnaryOp::Reciprocal => 1.0 / v,
        UnaryOp::LeakyRelu { alpha } => {
            if v >= 0.0 {
                v
            } else {
                f64::from(alpha) * v
            }
        }
        UnaryOp::HardSigmoid { alpha, beta } => {
            (f64::from(alpha) * v + f64::from(beta)).clamp(0.0, 1.0)
        }
        UnaryOp::HardSwish => v * (v / 6.0 + 0.5).clamp(0.0, 1.0),
        UnaryOp::Elu { alpha } => {
            if v >= 0.0 {
                v
            } else {
                f64::from(alpha) * (v.exp() - 1.0)
            }
        }
        UnaryOp::Selu { alpha, gamma } => {
            let (alpha, gamma) = (f64::from(alpha), f64::from(gamma));
            if v > 0.0 {
                gamma * v
            } else {
                gamma * (alpha * v.exp() - alpha)
            }
        }
        UnaryOp::Softplus => softplus(v),
        UnaryOp::Softsign => v / (1.0 + v.abs()),
        UnaryOp::Sign => {
            if v == 0.0 {
                0.0
            } else {
                v.signum()
            }
        }
        UnaryOp::Sin => v.sin(),
        UnaryOp::Cos => v.cos(),
        UnaryOp::Tan => v.tan(),
        UnaryOp::Asin => v.asin(),
        UnaryOp::Acos => v.acos(),
        UnaryOp::Atan => v.atan(),
        UnaryOp::Sinh => v.sinh(),
        UnaryOp::Cosh => v.cosh(),
        UnaryOp::Asinh => v.asinh(),
        UnaryOp::Acosh => v.acosh(),
        UnaryOp::Atanh => v.atanh(),
        UnaryOp::Celu { alpha } => {
            let alpha = f64::from(alpha);
            v.max(0.0) + (alpha * ((v / alpha).exp() - 1.0)).min(0.0)
        }
        UnaryOp::ThresholdedRelu { alpha } => {
            if v > f64::from(alpha) {
                v
            } else {
                0.0
            }
        }
        UnaryOp::Mish => v * softplus(v).tanh(),
        UnaryOp::Swish { alpha } => v / (1.0 + (-f64::from(alpha) * v).exp()),
        UnaryOp::ScaledHardSwish { scale, offset } => {
            v * (v / 6.0 + 0.5).clamp(0.0, 1.0) * f64::from(scale) + f64::from(offset)
        }
        UnaryOp::Shrink { bias, lambd } => {
            let (bias, lambd) = (f64::from(bias), f64::from(lambd));
            if v < -lambd {
                v + bias
            } else if v > lambd {
                v - bias
            } else {
                0.0
            }
        }
    }
}

fn run_unary(k: &Kernels, p: &UnaryParams, x: &[f32], dims: &[usize]) -> Vec<f32> {
    let mut y = vec![f32::NAN; x.len()];
    (k.unary)(p, In { data: x, dims }, Out { data: &mut y, dims });
    y
}

/// The table's unary kernel against the definition.
pub fn check_unary(k: &Kernels, c: &UnaryCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(unary::validate(&c.p, &c.dims, &c.dims), Ok(()));
    let y = run_unary(k, &c.p, &c.x, &c.dims);
    let want: Vec<Want> =
        c.x.iter()
            .map(|&v| Want::exact(unary_definition(c.p.op, f64::from(v))))
            .collect();
    assert_close(&y, &want)
}

/// Hand-computed unary answers.
pub fn known_unary(k: &Kernels) {
    let x = [-2.0, 0.5, 7.0];
    let dims = [3];
    let run = |op| run_unary(k, &UnaryParams { op }, &x, &dims);
    assert_known(&run(UnaryOp::Relu), &[0.0, 0.5, 7.0]);
    assert_known(&run(UnaryOp::Relu6), &[0.0, 0.5, 6.0]);
    assert_known(
        &run(UnaryOp::Clip {
            min: -1.0,
            max: 1.0,
        }),
        &[-1.0, 0.5, 1.0],
    );
    // min > max: every output is max (ONNX).
    assert_known(
        &run(UnaryOp::Clip {
            min: 1.0,
            max: -1.0,
        }),
        &[-1.0, -1.0, -1.0],
    );
    // sigmoid(0) = 1/2, sigmoid(-x) = 1 - sigmoid(x); tanh(0) = 0, odd.
    let x = [0.0, 2.0, -2.0, 100.0, -100.0];
    let dims = [5];
    let s = run_unary(
        k,
        &UnaryParams {
            op: UnaryOp::Sigmoid,
        },
        &x,
        &dims,
    );
    assert_known(&s, &[0.5, 0.880_797_1, 0.119_202_92, 1.0, 0.0]);
    let t = run_unary(k, &UnaryParams { op: UnaryOp::Tanh }, &x, &dims);
    assert_known(&t, &[0.0, 0.964_027_6, -0.964_027_6, 1.0, -1.0]);
    known_unary_breadth(k);
}

/// Hand-computed answers of the ops beyond the first five, at the points where ONNX pins the edges.
fn known_unary_breadth(k: &Kernels) {
    let run = |op, x: &[f32]| run_unary(k, &UnaryParams { op }, x, &[x.len()]);
    // Round: halves to even, and the sign of zero is kept.
    let x = [2.5, -0.5, 0.5, 1.5, -2.5, 3.5, 2.4, -2.6, 0.0];
    let r = run(UnaryOp::Round, &x);
    assert_known(&r, &[2.0, -0.0, 0.0, 2.0, -2.0, 4.0, 2.0, -3.0, 0.0]);
    assert!(r[1].is_sign_negative(), "Round(-0.5) = -0, got {}", r[1]);
    assert_known(&run(UnaryOp::Floor, &[-1.5, 1.5]), &[-2.0, 1.0]);
    assert_known(&run(UnaryOp::Ceil, &[-1.5, 1.5]), &[-1.0, 2.0]);
    assert_known(&run(UnaryOp::Sign, &[-3.0, 0.0, 2.0]), &[-1.0, 0.0, 1.0]);
    assert_known(&run(UnaryOp::Abs, &[-3.0, 2.0]), &[3.0, 2.0]);
    assert_known(&run(UnaryOp::Neg, &[-3.0, 2.0]), &[3.0, -2.0]);
    assert_known(&run(UnaryOp::Reciprocal, &[4.0, -0.5]), &[0.25, -2.0]);
    assert_eq!(run(UnaryOp::Reciprocal, &[0.0]), [f32::INFINITY]);
    assert_known(&run(UnaryOp::Sqrt, &[4.0, 0.0]), &[2.0, 0.0]);
    assert!(run(UnaryOp::Sqrt, &[-1.0])[0].is_nan());
    assert_eq!(run(UnaryOp::Log, &[0.0]), [f32::NEG_INFINITY]);
    assert_known(
        &run(UnaryOp::Log, &[1.0, core::f32::consts::E]),
        &[0.0, 1.0],
    );
    assert_known(
        &run(UnaryOp::Exp, &[0.0, 1.0]),
        &[1.0, core::f32::consts::E],
    );
    assert_eq!(run(UnaryOp::Exp, &[100.0, -200.0]), [f32::INFINITY, 0.0]);
    // erf(1) and Gelu(1) = 0.5 (1 + erf(1 / sqrt 2)) from tables.
    assert_known(
        &run(UnaryOp::Erf, &[0.0, 1.0, -1.0]),
        &[0.0, 0.842_700_8, -0.842_700_8],
    );
    assert_known(
        &run(UnaryOp::Gelu, &[0.0, 1.0, -1.0]),
        &[0.0, 0.841_344_7, -0.158_655_3],
    );
    assert_known(&run(UnaryOp::GeluTanh, &[0.0, 1.0]), &[0.0, 0.841_192]);
    let leaky = UnaryOp::LeakyRelu { alpha: 0.1 };
    assert_known(&run(leaky, &[-2.0, 3.0]), &[-0.2, 3.0]);
    let hard = UnaryOp::HardSigmoid {
        alpha: 0.2,
        beta: 0.5,
    };
    assert_known(&run(hard, &[-5.0, 0.0, 1.0, 5.0]), &[0.0, 0.5, 0.7, 1.0]);
    assert_known(
        &run(UnaryOp::HardSwish, &[-4.0, 0.0, 1.0, 4.0]),
        &[0.0, 0.0, 2.0 / 3.0, 4.0],
    );
    let elu = UnaryOp::Elu { alpha: 2.0 };
    assert_known(&run(elu, &[-100.0, 0.0, 3.0]), &[-2.0, 0.0, 3.0]);
    let selu = UnaryOp::Selu {
        alpha: 2.0,
        gamma: 3.0,
    };
    assert_known(&run(selu, &[-100.0, 0.0, 1.0]), &[-6.0, 0.0, 3.0]);
    assert_known(
        &run(UnaryOp::Softplus, &[0.0, 100.0, -100.0]),
        &[core::f32::consts::LN_2, 100.0, 0.0],
    );
    assert_known(&run(UnaryOp::Softsign, &[-3.0, 1.0]), &[-0.75, 0.5]);
    assert_known(
        &run(UnaryOp::Sin, &[0.0, core::f32::consts::FRAC_PI_2]),
        &[0.0, 1.0],
    );
    assert_known(
        &run(UnaryOp::Cos, &[0.0, core::f32::consts::PI]),
        &[1.0, -1.0],
    );
    let celu = UnaryOp::Celu { alpha: 2.0 };
    assert_known(&run(celu, &[-100.0, 1.0]), &[-2.0, 1.0]);
    let thresholded = UnaryOp::ThresholdedRelu { alpha: 1.0 };
    assert_known(&run(thresholded, &[1.0, 1.5, -2.0]), &[0.0, 1.5, 0.0]);
    let shrink = UnaryOp::Shrink {
        bias: 0.5,
        lambd: 1.0,
    };
    assert_known(
        &run(shrink, &[-2.0, -1.0, 0.5, 1.0, 3.0]),
        &[-1.5, 0.0, 0.0, 0.0, 2.5],
    );
    assert_known(&run(UnaryOp::Mish, &[0.0, 100.0]), &[0.0, 100.0]);
    let swish = UnaryOp::Swish { alpha: 2.0 };
    assert_known(&run(swish, &[0.0, 100.0, -100.0]), &[0.0, 100.0, 0.0]);
}

/// NaN passes through every unary op (ONNX, onnxruntime); in particular Relu, Relu6 and Clip, which
/// `f32::max` would turn into a number.
pub fn unary_nan_passes_through(k: &Kernels, &op: &UnaryOp) -> Result<(), TestCaseError> {
    let y = run_unary(k, &UnaryParams { op }, &[f32::NAN], &[1]);
    prop_assert!(y[0].is_nan(), "{:?}(NaN) = {}", op, y[0]);
    Ok(())
}

/// `validate` rejects outputs that are not the input's shape, and ranks above 6.
pub fn unary_validate_rejects_bad_shapes() {
    let p = UnaryParams { op: UnaryOp::Relu };
    let bad: [(&[usize], &[usize]); 4] = [
        (&[2, 3], &[3, 2]),
        (&[2, 3], &[6]),
        (&[2, 3], &[2, 3, 1]),
        (&[1; 7], &[1; 7]),
    ];
    for (x, y) in bad {
        assert!(
            matches!(unary::validate(&p, x, y), Err(Error::Shape { .. })),
            "{x:?} -> {y:?}"
        );
    }
    assert_eq!(unary::validate(&p, &[], &[]), Ok(()));
}

// --------------------------------------------------------------------------------------------- binary

/// A binary op over two broadcasting operands.
#[derive(Clone, Debug)]
pub struct BinaryCase {
    /// The op and its fused activation.
    pub p: BinaryParams,
    /// Dims of `a`.
    pub a_dims: Vec<usize>,
    /// Dims of `b`.
    pub b_dims: Vec<usize>,
    /// Dims of the output.
    pub y_dims: Vec<usize>,
    /// The first operand.
    pub a: Vec<f32>,
    /// The second operand.
    pub b: Vec<f32>,
}

impl BinaryCase {
    /// Runs `k`'s binary kernel on the case, into an output filled with `fill` first.
    pub fn run(&self, k: &Kernels, fill: f32) -> Vec<f32> {
        let a = In {
            data: &self.a,
            dims: &self.a_dims,
        };
        let b = In {
            data: &self.b,
            dims: &self.b_dims,
        };
        run_binary_into(k, &self.p, a, b, (&self.y_dims, fill))
    }
}

/// Every binary op.
pub const BINARY_OPS: [BinaryOp; 10] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Pow,
    BinaryOp::Min,
    BinaryOp::Max,
    BinaryOp::PRelu,
    BinaryOp::Mod,
    BinaryOp::FloorMod,
];

/// Any binary op and activation over operands of rank 0 to 4 that broadcast.
pub fn binary_case() -> impl Strategy<Value = BinaryCase> {
    let op = proptest::sample::select(BINARY_OPS.to_vec());
    (op, activation(), vec(dim(), 0..=4))
        .prop_flat_map(|(op, act, full)| {
            (
                Just(BinaryParams { op, act }),
                broadcast_operand(full.clone()),
                broadcast_operand(full),
            )
        })
        .prop_flat_map(|(p, a_dims, b_dims)| {
            let y_dims = broadcast_shape(&a_dims, &b_dims);
            let (na, nb) = (numel(&a_dims), numel(&b_dims));
            (
                Just(p),
                Just(a_dims),
                Just(b_dims),
                Just(y_dims),
                values(na),
                values(nb),
            )
        })
        .prop_map(|(p, a_dims, b_dims, y_dims, a, b)| BinaryCase {
            p,
            a_dims,
            b_dims,
            y_dims,
            a,
            b,
        })
}

fn run_binary(k: &Kernels, p: &BinaryParams, a: In<'_>, b: In<'_>, y_dims: &[usize]) -> Vec<f32> {
    run_binary_into(k, p, a, b, (y_dims, f32::NAN))
}

/// Runs `k`'s binary kernel into an output of `y_dims` filled with `fill` first.
fn run_binary_into(
    k: &Kernels,
    p: &BinaryParams,
    a: In<'_>,
    b: In<'_>,
    (y_dims, fill): (&[usize], f32),
) -> Vec<f32> {
    run_into(y_dims, fill, |y| (k.binary)(p, a, b, y))
}

/// The table's binary kernel against the definition, by explicit index mapping.
pub fn check_binary(k: &Kernels, c: &BinaryCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        binary::validate(&c.p, &c.a_dims, &c.b_dims, &c.y_dims),
        Ok(())
    );
    let y = c.run(k, f32::NAN);
    let want: Vec<Want> = (0..numel(&c.y_dims))
        .map(|i| {
            let index = unflat(i, &c.y_dims);
            let u = f64::from(c.a[broadcast_source(&index, &c.a_dims)]);
            let v = f64::from(c.b[broadcast_source(&index, &c.b_dims)]);
            let r = binary_definition(c.p.op, u, v);
            activate(c.p.act, Want::exact(r))
        })
        .collect();
    assert_close(&y, &want)
}

/// The binary functions, written out in f64.
fn binary_definition(op: BinaryOp, u: f64, v: f64) -> f64 {
    let nan = u.is_nan() || v.is_nan();
    match op {
        BinaryOp::Min if nan => f64::NAN,
        BinaryOp::Min => {
            if u < v {
                u
            } else {
                v
            }
        }
        BinaryOp::Max if nan => f64::NAN,
        BinaryOp::Max => {
            if u > v {
                u
            } else {
                v
            }
        }
        BinaryOp::PRelu => {
            if u >= 0.0 {
                u
            } else {
                u * v
            }
        }
        // Floored: the sign of the divisor (Python's `%`), from the floor formula directly.
        BinaryOp::FloorMod => {
            let r = u - (u / v).floor() * v;
            // The formula can round to exactly v in f64; the true remainder is then 0 with v's sign.
            if r == v {
                0.0 * v
            } else {
                r
            }
        }
        _ => arithmetic_definition(op, u, v),
    }
}

/// The binary ops that every definition here takes as IEEE arithmetic in f64: Add, Sub, Mul, Div, Pow
/// and Mod (Rust's `%` on floats is C's fmod: truncated division, the sign of the dividend). Panics on
/// the others, which each definition writes out itself.
pub fn arithmetic_definition(op: BinaryOp, u: f64, v: f64) -> f64 {
    match op {
        BinaryOp::Add => u + v,
        BinaryOp::Sub => u - v,
        BinaryOp::Mul => u * v,
        BinaryOp::Div => u / v,
        BinaryOp::Pow => u.powf(v),
        BinaryOp::Mod => u % v,
        BinaryOp::Min | BinaryOp::Max | BinaryOp::PRelu | BinaryOp::FloorMod => {
            panic!("{op:?} has a definition of its own")
        }
    }
}

/// Hand-computed binary answers.
pub fn known_binary(k: &Kernels) {
    let none = Activation::None;
    let p = |op, act| BinaryParams { op, act };
    // [2, 1] + [3] -> [2, 3]: a column plus a row.
    let col = In {
        data: &[1.0, 2.0],
        dims: &[2, 1],
    };
    let row = In {
        data: &[10.0, 20.0, 30.0],
        dims: &[3],
    };
    let y = run_binary(k, &p(BinaryOp::Add, none), col, row, &[2, 3]);
    assert_known(&y, &[11.0, 21.0, 31.0, 12.0, 22.0, 32.0]);
    let y = run_binary(k, &p(BinaryOp::Sub, none), row, col, &[2, 3]);
    assert_known(&y, &[9.0, 19.0, 29.0, 8.0, 18.0, 28.0]);
    // Fused Relu: 1 - 10 etc. are all negative.
    let y = run_binary(k, &p(BinaryOp::Sub, Activation::Relu), col, row, &[2, 3]);
    assert_known(&y, &[0.0; 6]);
    // Scalar times matrix, with Relu6.
    let s = In {
        data: &[3.0],
        dims: &[],
    };
    let m = In {
        data: &[1.0, -1.0, 2.5, 0.5],
        dims: &[2, 2],
    };
    let y = run_binary(k, &p(BinaryOp::Mul, Activation::Relu6), s, m, &[2, 2]);
    assert_known(&y, &[3.0, 0.0, 6.0, 1.5]);
    // IEEE division by zero, then clipped.
    let num = In {
        data: &[1.0, -1.0],
        dims: &[2],
    };
    let zero = In {
        data: &[0.0],
        dims: &[1],
    };
    let y = run_binary(k, &p(BinaryOp::Div, none), num, zero, &[2]);
    assert_eq!(y, [f32::INFINITY, f32::NEG_INFINITY]);
    let clip = Activation::Clip {
        min: -2.0,
        max: 2.0,
    };
    let y = run_binary(k, &p(BinaryOp::Div, clip), num, zero, &[2]);
    assert_known(&y, &[2.0, -2.0]);
    // [2, 1, 3] * [1, 2, 1]: both operands broadcast on different axes.
    let a = In {
        data: &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        dims: &[2, 1, 3],
    };
    let b = In {
        data: &[1.0, 10.0],
        dims: &[2, 1],
    };
    let y = run_binary(k, &p(BinaryOp::Mul, none), a, b, &[2, 2, 3]);
    let want = [
        1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 4.0, 5.0, 6.0, 40.0, 50.0, 60.0,
    ];
    assert_known(&y, &want);
    known_binary_breadth(k);
}

/// Hand-computed answers of Pow, Min, Max, PRelu and Mod.
fn known_binary_breadth(k: &Kernels) {
    let none = Activation::None;
    let run = |op, a: &[f32], b: &[f32], b_dims: &[usize]| {
        let p = BinaryParams { op, act: none };
        let a = In {
            data: a,
            dims: &[a.len()],
        };
        let b = In {
            data: b,
            dims: b_dims,
        };
        run_binary(k, &p, a, b, a.dims)
    };
    let y = run(
        BinaryOp::Pow,
        &[2.0, 4.0, 0.0, -2.0],
        &[3.0, 0.5, 0.0, 2.0],
        &[4],
    );
    assert_known(&y, &[8.0, 2.0, 1.0, 4.0]);
    // A negative base to a non-integer power is NaN.
    assert!(run(BinaryOp::Pow, &[-2.0], &[0.5], &[1])[0].is_nan());
    let x = [f32::NAN, -1.0, 2.0];
    let y = run(BinaryOp::Max, &x, &[0.0], &[]);
    assert!(y[0].is_nan(), "Max(NaN, 0) = {}", y[0]);
    assert_known(&y[1..], &[0.0, 2.0]);
    let y = run(BinaryOp::Min, &[0.0], &[f32::NAN], &[1]);
    assert!(y[0].is_nan(), "Min(0, NaN) = {}", y[0]);
    assert_known(&run(BinaryOp::Min, &x[1..], &[0.0], &[1]), &[-1.0, 0.0]);
    // PRelu with one slope per position of the last axis.
    let y = run(BinaryOp::PRelu, &[-2.0, -2.0, 3.0], &[0.5, 0.25, 0.5], &[3]);
    assert_known(&y, &[-1.0, -0.5, 3.0]);
    // fmod: the sign of the dividend.
    let y = run(
        BinaryOp::Mod,
        &[5.5, -5.5, 5.5, -5.5],
        &[2.0, 2.0, -2.0, -2.0],
        &[4],
    );
    assert_known(&y, &[1.5, -1.5, 1.5, -1.5]);
    assert!(run(BinaryOp::Mod, &[1.0], &[0.0], &[1])[0].is_nan());
}

/// `validate` rejects shapes that do not broadcast, and outputs that are not the broadcast shape.
pub fn binary_validate_rejects_bad_shapes() {
    let p = BinaryParams {
        op: BinaryOp::Add,
        act: Activation::None,
    };
    let bad: [(&[usize], &[usize], &[usize]); 8] = [
        (&[2, 3], &[4], &[2, 3]),    // 3 vs 4
        (&[2, 3], &[3], &[2, 3, 1]), // rank too high
        (&[2, 3], &[3], &[3]),       // rank too low
        (&[2, 3], &[3], &[3, 3]),    // wrong dim
        (&[2, 1], &[1, 3], &[2, 1]), // does not stretch
        (&[2, 1], &[3], &[2, 1]),    // does not stretch
        (&[0], &[2], &[0]),          // 0 vs 2 does not broadcast
        (&[1; 7], &[1; 7], &[1; 7]), // rank above 6
    ];
    for (a, b, y) in bad {
        assert!(
            matches!(binary::validate(&p, a, b, y), Err(Error::Shape { .. })),
            "{a:?} op {b:?} -> {y:?}"
        );
    }
    let good: [(&[usize], &[usize], &[usize]); 4] = [
        (&[], &[], &[]),
        (&[2, 1], &[1, 3], &[2, 3]),
        (&[0], &[1], &[0]),
        (&[4, 1, 3], &[5, 1], &[4, 5, 3]),
    ];
    for (a, b, y) in good {
        assert_eq!(
            binary::validate(&p, a, b, y),
            Ok(()),
            "{a:?} op {b:?} -> {y:?}"
        );
    }
}
