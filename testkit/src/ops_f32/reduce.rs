//! Reductions (Sum, Mean, Max, Min, Prod, L1, L2, LogSumExp, SumSquare over any set of axes, dims
//! kept or removed), and GlobalMaxPool as a Max over H and W of an NHWC tensor.

use ember_core::ops::nn::reduce::{self, ReduceOp, ReduceParams};
use ember_core::ops::In;
use ember_core::{Error, Kernels};
use proptest::collection::vec;
use proptest::prelude::*;

use super::{assert_close, assert_known, dim, numel, unflat, Want};
use crate::shape::run_into;

/// A reduction of a tensor.
#[derive(Clone, Debug)]
pub struct ReduceCase {
    p: ReduceParams,
    x_dims: Vec<usize>,
    x: Vec<f32>,
}

/// Every reduction.
pub fn reduce_op() -> impl Strategy<Value = ReduceOp> {
    prop_oneof![
        Just(ReduceOp::Sum),
        Just(ReduceOp::Mean),
        Just(ReduceOp::Max),
        Just(ReduceOp::Min),
        Just(ReduceOp::Prod),
        Just(ReduceOp::L1),
        Just(ReduceOp::L2),
        Just(ReduceOp::LogSumExp),
        Just(ReduceOp::SumSquare),
        Just(ReduceOp::LogSum),
    ]
}

/// Rank 0 to 4, any axes, both `keepdims`. Prod gets values in `-1.5..1.5` so that products of up to
/// 256 of them stay far from overflow; LogSum gets positive values (the log of a sum near 0 is
/// ill-conditioned, and of a negative one NaN).
pub fn reduce_case() -> impl Strategy<Value = ReduceCase> {
    (vec(dim(), 0..=4), reduce_op(), any::<bool>())
        .prop_flat_map(|(x_dims, op, keepdims)| {
            let n = numel(&x_dims);
            let axes = 0u8..(1u8 << x_dims.len());
            let (lo, hi): (f32, f32) = match op {
                ReduceOp::Prod => (-1.5, 1.5),
                ReduceOp::LogSum => (0.0, 10.0),
                _ => (-10.0, 10.0),
            };
            (Just(x_dims), Just(op), Just(keepdims), axes, vec(lo..hi, n))
        })
        .prop_map(|(x_dims, op, keepdims, axes, x)| ReduceCase {
            p: ReduceParams { op, axes, keepdims },
            x_dims,
            x,
        })
}

/// The output dims by the definition.
fn output_dims(p: &ReduceParams, x_dims: &[usize]) -> Vec<usize> {
    let mut y = Vec::new();
    for (d, &n) in x_dims.iter().enumerate() {
        if p.axes & (1 << d) == 0 {
            y.push(n);
        } else if p.keepdims {
            y.push(1);
        }
    }
    y
}

fn run_reduce(k: &Kernels, p: &ReduceParams, x: &[f32], x_dims: &[usize]) -> Vec<f32> {
    let y_dims = output_dims(p, x_dims);
    assert_eq!(reduce::validate(p, x_dims, &y_dims), Ok(()));
    run_into(&y_dims, f32::NAN, |y| {
        (k.reduce)(
            p,
            In {
                data: x,
                dims: x_dims,
            },
            y,
        )
    })
}

/// The reduction of `lane` in f64, with the magnitude its rounding error scales with.
fn definition(op: ReduceOp, lane: &[f64]) -> Want {
    let sum_abs: f64 = lane.iter().map(|v| v.abs()).sum();
    let n = lane.len() as f64;
    match op {
        ReduceOp::Sum => Want {
            value: lane.iter().sum(),
            magnitude: sum_abs,
        },
        ReduceOp::Mean => Want {
            value: lane.iter().sum::<f64>() / n,
            magnitude: sum_abs / n,
        },
        ReduceOp::Max => Want::exact(lane.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        ReduceOp::Min => Want::exact(lane.iter().copied().fold(f64::INFINITY, f64::min)),
        ReduceOp::Prod => Want::exact(lane.iter().product()),
        ReduceOp::L1 => Want::exact(sum_abs),
        ReduceOp::L2 => Want::exact(lane.iter().map(|v| v * v).sum::<f64>().sqrt()),
        ReduceOp::SumSquare => Want::exact(lane.iter().map(|v| v * v).sum()),
        ReduceOp::LogSum => Want::exact(lane.iter().sum::<f64>().ln()),
        ReduceOp::LogSumExp => {
            let value = lane.iter().map(|v| v.exp()).sum::<f64>().ln();
            Want {
                value,
                magnitude: value.abs() + lane.iter().fold(0.0, |m: f64, v| m.max(v.abs())),
            }
        }
    }
}

/// The table's reduction against the definition: output `i` gathers every input whose index agrees
/// with `i` on the kept axes.
pub fn check_reduce(k: &Kernels, c: &ReduceCase) -> Result<(), TestCaseError> {
    let y_dims = output_dims(&c.p, &c.x_dims);
    prop_assert_eq!(reduce::validate(&c.p, &c.x_dims, &y_dims), Ok(()));
    // The output index with reduced axes kept as 0, for matching against input indices.
    let kept: Vec<usize> = (0..c.x_dims.len())
        .filter(|&d| c.p.axes & (1 << d) == 0)
        .collect();
    let want: Vec<Want> = (0..numel(&y_dims))
        .map(|pos| {
            let y_index = unflat(pos, &y_dims);
            // Positions of the kept axes in the output index.
            let kept_index: Vec<usize> = if c.p.keepdims {
                kept.iter().map(|&d| y_index[d]).collect()
            } else {
                y_index.clone()
            };
            let lane: Vec<f64> = (0..c.x.len())
                .filter(|&i| {
                    let x_index = unflat(i, &c.x_dims);
                    kept.iter().zip(&kept_index).all(|(&d, &v)| x_index[d] == v)
                })
                .map(|i| f64::from(c.x[i]))
                .collect();
            definition(c.p.op, &lane)
        })
        .collect();
    assert_close(&run_reduce(k, &c.p, &c.x, &c.x_dims), &want)
}

/// Hand-computed reductions.
pub fn known_reduce(k: &Kernels) {
    let p = |op, axes, keepdims| ReduceParams { op, axes, keepdims };
    // x = [[1, 2, 3], [4, 5, 6]]
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let dims = [2, 3];
    let cases: [(ReduceParams, &[f32]); 10] = [
        (p(ReduceOp::Sum, 0b10, false), &[6.0, 15.0]),
        (p(ReduceOp::Mean, 0b01, true), &[2.5, 3.5, 4.5]),
        (p(ReduceOp::Max, 0b11, false), &[6.0]),
        (p(ReduceOp::Min, 0b10, true), &[1.0, 4.0]),
        (p(ReduceOp::Prod, 0b10, false), &[6.0, 120.0]),
        (p(ReduceOp::L1, 0b01, false), &[5.0, 7.0, 9.0]),
        (p(ReduceOp::SumSquare, 0b10, false), &[14.0, 77.0]),
        (
            p(ReduceOp::LogSum, 0b10, false),
            &[1.791_759_5, 2.708_050_2],
        ),
        // No axes: each element is its own lane.
        (p(ReduceOp::Sum, 0, true), &x),
        (p(ReduceOp::L2, 0b11, true), &[9.539_392]),
    ];
    for (p, want) in cases {
        assert_known(&run_reduce(k, &p, &x, &dims), want);
    }
    // L1 and L2 of signed values; LogSumExp of values whose exp overflows f32.
    let v = [-3.0, 4.0];
    assert_known(&run_reduce(k, &p(ReduceOp::L1, 1, false), &v, &[2]), &[7.0]);
    assert_known(&run_reduce(k, &p(ReduceOp::L2, 1, false), &v, &[2]), &[5.0]);
    let big = [1000.0, 1000.0];
    let lse = run_reduce(k, &p(ReduceOp::LogSumExp, 1, false), &big, &[2]);
    assert_known(&lse, &[1000.0 + std::f32::consts::LN_2]);
    // Over nothing: Sum 0, Prod 1, Max -inf, Min +inf, LogSumExp -inf, Mean NaN.
    let empty = |op| run_reduce(k, &p(op, 0b10, false), &[], &[2, 0]);
    assert_known(&empty(ReduceOp::Sum), &[0.0, 0.0]);
    assert_known(&empty(ReduceOp::Prod), &[1.0, 1.0]);
    assert_known(&empty(ReduceOp::Max), &[f32::NEG_INFINITY; 2]);
    assert_known(&empty(ReduceOp::Min), &[f32::INFINITY; 2]);
    assert_known(&empty(ReduceOp::LogSumExp), &[f32::NEG_INFINITY; 2]);
    assert!(empty(ReduceOp::Mean).iter().all(|v| v.is_nan()));
    // GlobalMaxPool: Max over H and W of NHWC [1, 2, 2, 2], dims kept.
    let x = [1.0, -1.0, 5.0, -2.0, 3.0, -3.0, 2.0, -0.5];
    let gmp = run_reduce(k, &p(ReduceOp::Max, 0b0110, true), &x, &[1, 2, 2, 2]);
    assert_known(&gmp, &[5.0, -0.5]);
    // NaN propagates through Max and Min.
    let nan = [1.0, f32::NAN, 3.0];
    for op in [ReduceOp::Max, ReduceOp::Min] {
        assert!(run_reduce(k, &p(op, 1, false), &nan, &[3])[0].is_nan());
    }
}

/// `validate` rejects axes past the rank and outputs that do not follow from the axes.
pub fn reduce_validate_rejects_bad_shapes() {
    let p = |axes, keepdims| ReduceParams {
        op: ReduceOp::Sum,
        axes,
        keepdims,
    };
    let bad: [(ReduceParams, &[usize], &[usize]); 6] = [
        (p(0b100, true), &[2, 3], &[2, 3]), // axis 2 of rank 2
        (p(0b10, true), &[2, 3], &[2]),     // keepdims, dim removed
        (p(0b10, false), &[2, 3], &[2, 1]), // dim kept without keepdims
        (p(0b10, false), &[2, 3], &[3]),    // wrong axis removed
        (p(0b01, true), &[2, 3], &[1, 2]),  // wrong kept size
        (p(0, false), &[1; 7], &[1; 7]),    // rank 7
    ];
    for (p, x, y) in bad {
        assert!(
            matches!(reduce::validate(&p, x, y), Err(Error::Shape { .. })),
            "{p:?} {x:?} -> {y:?}"
        );
    }
    assert_eq!(reduce::validate(&p(0b11, false), &[2, 3], &[]), Ok(()));
    assert_eq!(reduce::validate(&p(0b01, true), &[2, 3], &[1, 3]), Ok(()));
}
