//! Element-wise kernels: unary ops and broadcasting binary ops.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{self, BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{self, UnaryOp, UnaryParams};
use ember_core::ops::{In, Out};
use ember_core::{Error, Kernels};
use proptest::collection::vec;
use proptest::prelude::*;

use crate::{
    activate, activation, assert_close, assert_known, dim, flat, numel, unflat, values, Want,
};

// ---------------------------------------------------------------------------------------------- unary

/// A unary op over a tensor.
#[derive(Clone, Debug)]
pub struct UnaryCase {
    p: UnaryParams,
    dims: Vec<usize>,
    x: Vec<f32>,
}

/// Any unary op (Clip bounds possibly crossed), rank 0 to 4.
pub fn unary_case() -> impl Strategy<Value = UnaryCase> {
    let op = prop_oneof![
        Just(UnaryOp::Relu),
        Just(UnaryOp::Relu6),
        (-5.0f32..5.0, -5.0f32..5.0).prop_map(|(min, max)| UnaryOp::Clip { min, max }),
        Just(UnaryOp::Sigmoid),
        Just(UnaryOp::Tanh),
    ];
    (op, vec(dim(), 0..=4))
        .prop_flat_map(|(op, dims)| {
            let n = numel(&dims);
            (Just(UnaryParams { op }), Just(dims), values(n))
        })
        .prop_map(|(p, dims, x)| UnaryCase { p, dims, x })
}

/// The unary functions, written out in f64.
fn unary_definition(op: UnaryOp, v: f64) -> f64 {
    let clip = |min: f64, max: f64| {
        crate::activation_definition(
            Activation::Clip {
                min: min as f32,
                max: max as f32,
            },
            v,
        )
    };
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
}

/// `validate` rejects outputs that are not the input's shape, and ranks above 6.
#[test]
fn unary_validate_rejects_bad_shapes() {
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
    p: BinaryParams,
    a_dims: Vec<usize>,
    b_dims: Vec<usize>,
    y_dims: Vec<usize>,
    a: Vec<f32>,
    b: Vec<f32>,
}

/// An operand that broadcasts to `full`: either `full` itself, or a suffix of it with some dims set to 1.
pub fn broadcast_operand(full: Vec<usize>) -> impl Strategy<Value = Vec<usize>> {
    let r = full.len();
    let suffix = full.clone();
    prop_oneof![
        1 => Just(full),
        2 => (0..=r, vec(any::<bool>(), r)).prop_map(move |(rank, ones)| {
            suffix[r - rank..]
                .iter()
                .zip(&ones)
                .map(|(&d, &one)| if one { 1 } else { d })
                .collect()
        }),
    ]
}

/// Numpy broadcasting of two shapes known to be compatible.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let r = a.len().max(b.len());
    let at = |dims: &[usize], i: usize| {
        // Axis i of the right-aligned shape, 1 where `dims` is too short.
        (i + dims.len()).checked_sub(r).map_or(1, |j| dims[j])
    };
    (0..r)
        .map(|i| {
            let (da, db) = (at(a, i), at(b, i));
            if da == 1 {
                db
            } else {
                da
            }
        })
        .collect()
}

/// Multi-index in an operand of shape `dims` of the output multi-index `y_index` (right-aligned;
/// broadcast axes read 0).
pub fn broadcast_index(y_index: &[usize], dims: &[usize]) -> Vec<usize> {
    let skip = y_index.len() - dims.len();
    dims.iter()
        .zip(&y_index[skip..])
        .map(|(&d, &i)| if d == 1 { 0 } else { i })
        .collect()
}

/// Flat position in an operand of shape `dims` of the output multi-index `y_index`.
pub fn broadcast_source(y_index: &[usize], dims: &[usize]) -> usize {
    flat(&broadcast_index(y_index, dims), dims)
}

/// Any binary op and activation over operands of rank 0 to 4 that broadcast.
pub fn binary_case() -> impl Strategy<Value = BinaryCase> {
    let op = prop_oneof![
        Just(BinaryOp::Add),
        Just(BinaryOp::Sub),
        Just(BinaryOp::Mul),
        Just(BinaryOp::Div),
    ];
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
    let mut y = vec![f32::NAN; numel(y_dims)];
    (k.binary)(
        p,
        a,
        b,
        Out {
            data: &mut y,
            dims: y_dims,
        },
    );
    y
}

/// The table's binary kernel against the definition, by explicit index mapping.
pub fn check_binary(k: &Kernels, c: &BinaryCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        binary::validate(&c.p, &c.a_dims, &c.b_dims, &c.y_dims),
        Ok(())
    );
    let a = In {
        data: &c.a,
        dims: &c.a_dims,
    };
    let b = In {
        data: &c.b,
        dims: &c.b_dims,
    };
    let y = run_binary(k, &c.p, a, b, &c.y_dims);
    let want: Vec<Want> = (0..numel(&c.y_dims))
        .map(|i| {
            let index = unflat(i, &c.y_dims);
            let u = f64::from(c.a[broadcast_source(&index, &c.a_dims)]);
            let v = f64::from(c.b[broadcast_source(&index, &c.b_dims)]);
            let r = match c.p.op {
                BinaryOp::Add => u + v,
                BinaryOp::Sub => u - v,
                BinaryOp::Mul => u * v,
                BinaryOp::Div => u / v,
            };
            activate(c.p.act, Want::exact(r))
        })
        .collect();
    assert_close(&y, &want)
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
}

/// `validate` rejects shapes that do not broadcast, and outputs that are not the broadcast shape.
#[test]
fn binary_validate_rejects_bad_shapes() {
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
