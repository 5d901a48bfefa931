//! Unary and binary kernels of every level against `ember-core`'s reference kernels, on proptest
//! cases aimed at their edges: lengths around and between the vector widths, every broadcast pattern
//! (equal shapes, a scalar on either side, a vector along the last axis, a value per row, outer
//! products, lower ranks), special values (NaN, infinities, signed zeros, subnormals) and every fused
//! activation.
//!
//! Ops made of IEEE arithmetic and comparisons must give the reference's bits (any NaN for a NaN);
//! the transcendental ones must agree within `1e-5 * max(1, |reference|)`, far looser than the ulp
//! bounds `transcendental.rs` asserts against f64.

mod common;

use common::{check, close, length, levels, same_bits, value};
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{self, BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::ops::{In, Out};
use ember_core::REFERENCE;
use ember_testkit::ops_f32::math::BinaryCase;
use proptest::collection::vec;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------- unary

/// Every unary op, parameters drawn where it has them.
fn unary_op() -> impl Strategy<Value = UnaryOp> {
    use UnaryOp::*;
    let plain = proptest::sample::select(vec![
        Relu, Relu6, Sigmoid, Tanh, Abs, Neg, Sqrt, Exp, Log, Erf, Gelu, GeluTanh, Floor, Ceil,
        Round, Reciprocal, HardSwish, Softplus, Softsign, Sign, Sin, Cos, Tan, Asin, Acos, Atan,
        Sinh, Cosh, Asinh, Acosh, Atanh, Mish,
    ]);
    let p = || -3.0f32..3.0;
    prop_oneof![
        8 => plain,
        1 => (-5.0f32..5.0, -5.0f32..5.0).prop_map(|(min, max)| Clip { min, max }),
        1 => p().prop_map(|alpha| LeakyRelu { alpha }),
        1 => (p(), p()).prop_map(|(alpha, beta)| HardSigmoid { alpha, beta }),
        1 => p().prop_map(|alpha| Elu { alpha }),
        1 => (p(), p()).prop_map(|(alpha, gamma)| Selu { alpha, gamma }),
        1 => (0.1f32..3.0).prop_map(|alpha| Celu { alpha }),
        1 => (-5.0f32..5.0).prop_map(|alpha| ThresholdedRelu { alpha }),
        1 => (p(), 0.0f32..3.0).prop_map(|(bias, lambd)| Shrink { bias, lambd }),
        1 => p().prop_map(|alpha| Swish { alpha }),
        1 => (p(), p()).prop_map(|(scale, offset)| ScaledHardSwish { scale, offset }),
    ]
}

/// Whether `op` is IEEE arithmetic and comparisons only (or the reference kernel itself), so that
/// every level must give the reference's bits.
fn exact(op: UnaryOp) -> bool {
    use UnaryOp::*;
    !matches!(
        op,
        Sigmoid
            | Tanh
            | Exp
            | Log
            | Erf
            | Gelu
            | GeluTanh
            | Elu { .. }
            | Selu { .. }
            | Softplus
            | Celu { .. }
            | Mish
            | Swish { .. }
    )
}

fn run_unary(k: &ember_core::Kernels, op: UnaryOp, x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0; x.len()];
    let dims = [x.len()];
    (k.unary)(
        &UnaryParams { op },
        In {
            data: x,
            dims: &dims,
        },
        Out {
            data: &mut y,
            dims: &dims,
        },
    );
    y
}

fn check_unary(op: UnaryOp, x: &[f32]) -> Result<(), TestCaseError> {
    let want = run_unary(&REFERENCE, op, x);
    for (isa, k) in levels() {
        let got = run_unary(k, op, x);
        let what = format!("{isa} {op:?}");
        if exact(op) {
            check(&what, &got, &want, |_, g, w| same_bits(g, w))?;
        } else {
            check(&what, &got, &want, |_, g, w| close(g, w, 1e-5, 0.0))?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn unary_matches_reference(
        (op, x) in (unary_op(), length()).prop_flat_map(|(op, n)| {
            let values = prop_oneof![4 => value(12.0), 1 => value(120.0)];
            (Just(op), vec(values, n))
        })
    ) {
        check_unary(op, &x)?;
    }
}

#[test]
fn unary_every_tail_length() {
    // Every length up to a few blocks: the straddling vector at every offset.
    for n in 0..=80 {
        let x: Vec<f32> = (0..n).map(|i| (i as f32 - 30.0) * 0.37).collect();
        for op in [
            UnaryOp::Relu,
            UnaryOp::Sigmoid,
            UnaryOp::Gelu,
            UnaryOp::Round,
        ] {
            check_unary(op, &x).unwrap();
        }
    }
}

// --------------------------------------------------------------------------------------------- binary

fn binary_op() -> impl Strategy<Value = BinaryOp> {
    use BinaryOp::*;
    proptest::sample::select(vec![
        Add, Sub, Mul, Div, Pow, Min, Max, PRelu, Mod, FloorMod,
    ])
}

fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        3 => Just(Activation::None),
        1 => Just(Activation::Relu),
        1 => Just(Activation::Relu6),
        1 => (-5.0f32..5.0, -5.0f32..5.0).prop_map(|(min, max)| Activation::Clip { min, max }),
    ]
}

/// An output axis: short ones around the vector widths, sometimes longer.
fn axis() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 1usize..=5, 2 => 6usize..=19, 1 => 30usize..=40, 1 => Just(0usize)]
}

/// Output dims of rank 0..=5 (at most a few thousand elements), and for each operand which axes it
/// runs along (else it is 1 there) and how many leading axes it drops.
fn binary_case() -> impl Strategy<Value = BinaryCase> {
    vec(axis(), 0..=5)
        .prop_filter("a few thousand elements at most", |d| {
            d.iter().product::<usize>() <= 6000
        })
        .prop_flat_map(|y_dims| {
            let r = y_dims.len();
            (
                binary_op(),
                activation(),
                Just(y_dims),
                vec(0u8..3, r),
                0..=r,
                0..=r,
            )
        })
        .prop_flat_map(|(op, act, y_dims, pattern, drop_a, drop_b)| {
            // Per axis: 0 both run, 1 only `a`, 2 only `b` (the other is 1 there).
            let dims = |who: u8, drop: usize| {
                let d: Vec<usize> = y_dims
                    .iter()
                    .zip(&pattern)
                    .map(|(&n, &p)| if p == 0 || p == who { n } else { 1 })
                    .collect();
                // Leading axes may go where the operand is 1 anyway.
                let droppable = d.iter().take_while(|&&n| n == 1).count();
                d[drop.min(droppable)..].to_vec()
            };
            // The output has the larger rank: one operand keeps all the axes.
            let drop_b = if drop_a > 0 { 0 } else { drop_b };
            let (a_dims, b_dims) = (dims(1, drop_a), dims(2, drop_b));
            let (na, nb): (usize, usize) = (a_dims.iter().product(), b_dims.iter().product());
            (
                Just(BinaryParams { op, act }),
                Just(a_dims),
                Just(b_dims),
                Just(y_dims),
                vec(value(8.0), na),
                vec(value(8.0), nb),
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

/// Every binary op gives the reference's bits (any NaN for a NaN).
fn check_binary(c: &BinaryCase) -> Result<(), TestCaseError> {
    prop_assert!(binary::validate(&c.p, &c.a_dims, &c.b_dims, &c.y_dims).is_ok());
    let want = c.run(&REFERENCE, 0.0);
    for (isa, k) in levels() {
        let got = c.run(k, 0.0);
        let what = format!("{isa} {:?} {:?} {:?}", c.p, c.a_dims, c.b_dims);
        check(&what, &got, &want, |_, g, w| same_bits(g, w))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn binary_matches_reference(case in binary_case()) {
        check_binary(&case)?;
    }
}

/// `a op b` for the named shapes, values from a fixed sequence with every special value in it.
fn pattern(op: BinaryOp, act: Activation, a_dims: &[usize], b_dims: &[usize], y_dims: &[usize]) {
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-40];
    let fill = |n: usize, seed: usize| -> Vec<f32> {
        (0..n)
            .map(|i| match (i * 7 + seed) % 23 {
                k if k < specials.len() => specials[k],
                k => (k as f32 - 11.5) * 0.75,
            })
            .collect()
    };
    let case = BinaryCase {
        p: BinaryParams { op, act },
        a: fill(a_dims.iter().product(), 1),
        b: fill(b_dims.iter().product(), 5),
        a_dims: a_dims.to_vec(),
        b_dims: b_dims.to_vec(),
        y_dims: y_dims.to_vec(),
    };
    check_binary(&case).unwrap();
}

#[test]
fn binary_broadcast_patterns() {
    let nhwc = [1, 5, 7, 37];
    let shapes: [(&[usize], &[usize], &[usize]); 10] = [
        (&nhwc, &nhwc, &nhwc),
        (&nhwc, &[1, 1, 1, 1], &nhwc),
        (&[1, 1, 1, 1], &nhwc, &nhwc),
        (&nhwc, &[], &nhwc),
        (&nhwc, &[37], &nhwc),
        (&[37], &nhwc, &nhwc),
        (&[1, 40, 123], &[1, 40, 1], &[1, 40, 123]),
        (&[13, 1], &[1, 29], &[13, 29]),
        (&[2, 1, 7, 1], &[1, 3, 1, 9], &[2, 3, 7, 9]),
        (&[], &[], &[]),
    ];
    for op in [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::PRelu,
        BinaryOp::Pow,
    ] {
        for act in [Activation::None, Activation::Relu, Activation::Relu6] {
            for (a, b, y) in shapes {
                pattern(op, act, a, b, y);
            }
        }
    }
}

#[test]
fn pow_by_two_is_the_square() {
    let a: Vec<f32> = (0..45)
        .map(|i| (i as f32 - 22.0) * 0.9)
        .chain([f32::NAN, -0.0])
        .collect();
    let case = BinaryCase {
        p: BinaryParams {
            op: BinaryOp::Pow,
            act: Activation::None,
        },
        a_dims: vec![a.len()],
        b_dims: vec![1],
        y_dims: vec![a.len()],
        b: vec![2.0],
        a,
    };
    check_binary(&case).unwrap();
}
