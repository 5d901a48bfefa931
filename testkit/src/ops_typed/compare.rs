//! Comparisons (any dtype in, Bool out) and Bool logic: And, Or, Xor, Not.

use std::cmp::Ordering;

use ember_core::ops::math::compare::{self, CompareOp, CompareParams};
use ember_core::ops::math::logical::{self, LogicalOp, LogicalParams};
use ember_core::{DType, Kernels};
use proptest::prelude::*;

use super::{
    assert_same, broadcast_shapes, dim, ints, is_shape_error, run, tensor, tensor_with,
    two_operands, Arg, Known, Num, Tensor, TwoOperands, ALL,
};

// ----------------------------------------------------------------------------------------- comparison

/// A comparison of two broadcasting operands of one dtype.
pub type CompareCase = TwoOperands<CompareParams>;

/// Any comparison, any dtype, operands of rank 0 to 4 that broadcast.
pub fn compare_case() -> impl Strategy<Value = CompareCase> {
    let op = proptest::sample::select(vec![
        CompareOp::Equal,
        CompareOp::Less,
        CompareOp::LessOrEqual,
        CompareOp::Greater,
        CompareOp::GreaterOrEqual,
    ]);
    (
        op,
        proptest::sample::select(ALL.to_vec()),
        broadcast_shapes(2),
    )
        .prop_flat_map(|(op, dtype, shapes)| {
            two_operands(CompareParams { op }, shapes, move |dims| {
                tensor(dtype, dims)
            })
        })
}

/// The order of two exact values of one dtype; `None` when either is NaN (unordered).
fn order(u: Num, v: Num) -> Option<Ordering> {
    match (u, v) {
        (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
        (Num::Float(a), Num::Float(b)) => {
            if a.is_nan() || b.is_nan() {
                None
            } else if a < b {
                Some(Ordering::Less)
            } else if a > b {
                Some(Ordering::Greater)
            } else {
                // -0 and +0 are equal.
                Some(Ordering::Equal)
            }
        }
        _ => panic!("operands of different kinds: {u:?}, {v:?}"),
    }
}

/// The comparisons, written out: anything compared with NaN is false, `Equal` included.
fn compare_definition(op: CompareOp, u: Num, v: Num) -> bool {
    let Some(o) = order(u, v) else {
        return false;
    };
    match op {
        CompareOp::Equal => o == Ordering::Equal,
        CompareOp::Less => o == Ordering::Less,
        CompareOp::LessOrEqual => o != Ordering::Greater,
        CompareOp::Greater => o == Ordering::Greater,
        CompareOp::GreaterOrEqual => o != Ordering::Less,
    }
}

fn run_compare(
    k: &Kernels,
    p: &CompareParams,
    a: &Tensor,
    b: &Tensor,
    y_dims: &[usize],
) -> Vec<Num> {
    run(&[a, b], DType::Bool, y_dims, |x, y| {
        (k.compare)(p, x[0], x[1], y)
    })
}

/// The table's comparison against the definition, by explicit index mapping.
pub fn check_compare(k: &Kernels, c: &CompareCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(c.validate_with(DType::Bool, compare::validate), Ok(()));
    let got = run_compare(k, &c.p, &c.a, &c.b, &c.y_dims);
    let want: Vec<Num> = c
        .operands()
        .map(|(u, v)| Num::Int(i128::from(compare_definition(c.p.op, u, v))))
        .collect();
    assert_same(&got, &want)
}

/// Hand-computed comparisons.
pub fn known_compare(k: &Kernels) {
    let mut known = Known::default();
    let p = |op| CompareParams { op };
    // [2, 1] against [3], int32: a column against a row.
    let col = Tensor::ints(DType::I32, &[2, 1], &[1, 3]);
    let row = Tensor::ints(DType::I32, &[3], &[0, 1, 2]);
    let y = run_compare(k, &p(CompareOp::Less), &col, &row, &[2, 3]);
    known.check(&y, &ints(&[0, 0, 1, 0, 0, 0]));
    let y = run_compare(k, &p(CompareOp::GreaterOrEqual), &col, &row, &[2, 3]);
    known.check(&y, &ints(&[1, 1, 0, 1, 1, 1]));
    // u8 compares unsigned: 200 > 100; i8 compares signed: -56 < 100 (the same bytes).
    let a = Tensor::ints(DType::U8, &[1], &[200]);
    let b = Tensor::ints(DType::U8, &[1], &[100]);
    known.check(
        &run_compare(k, &p(CompareOp::Greater), &a, &b, &[1]),
        &ints(&[1]),
    );
    let a = Tensor::ints(DType::I8, &[1], &[-56]);
    let b = Tensor::ints(DType::I8, &[1], &[100]);
    known.check(
        &run_compare(k, &p(CompareOp::Greater), &a, &b, &[1]),
        &ints(&[0]),
    );
    // int64 beyond 2^53: neighbours that f64 would merge are told apart.
    let big = 1i128 << 60;
    let a = Tensor::ints(DType::I64, &[2], &[big, big + 1]);
    let b = Tensor::ints(DType::I64, &[], &[big + 1]);
    known.check(
        &run_compare(k, &p(CompareOp::Equal), &a, &b, &[2]),
        &ints(&[0, 1]),
    );
    // NaN is unordered, even with itself; -0 equals +0.
    let x = Tensor::floats(DType::F32, &[4], &[f64::NAN, f64::NAN, 1.0, -0.0]);
    let z = Tensor::floats(DType::F32, &[4], &[f64::NAN, 1.0, f64::NAN, 0.0]);
    for op in [
        CompareOp::Equal,
        CompareOp::LessOrEqual,
        CompareOp::GreaterOrEqual,
    ] {
        let want = ints(&[0, 0, 0, 1]);
        known.check(&run_compare(k, &p(op), &x, &z, &[4]), &want);
    }
    let x = Tensor::floats(DType::F64, &[2], &[f64::NEG_INFINITY, 1e300]);
    let z = Tensor::floats(DType::F64, &[], &[f64::INFINITY]);
    known.check(
        &run_compare(k, &p(CompareOp::Less), &x, &z, &[2]),
        &ints(&[1, 1]),
    );
    // Bools compare as 0 < 1; scalars give a scalar.
    let t = Tensor::ints(DType::Bool, &[], &[1]);
    let f = Tensor::ints(DType::Bool, &[], &[0]);
    known.check(
        &run_compare(k, &p(CompareOp::Greater), &t, &f, &[]),
        &ints(&[1]),
    );
    known.finish();
}

/// `validate` rejects mixed or float16 inputs, a non-bool output, and shapes that do not broadcast.
pub fn compare_validate_rejects() {
    let p = CompareParams {
        op: CompareOp::Less,
    };
    let s: &[usize] = &[2, 3];
    let bad: [(Arg<'_>, Arg<'_>, Arg<'_>); 9] = [
        ((s, DType::I32), (s, DType::I64), (s, DType::Bool)),
        ((s, DType::F32), (s, DType::F64), (s, DType::Bool)),
        ((s, DType::U8), (s, DType::Bool), (s, DType::Bool)),
        ((s, DType::F16), (s, DType::F32), (s, DType::Bool)),
        ((s, DType::I32), (s, DType::I32), (s, DType::U8)),
        ((s, DType::I32), (s, DType::I32), (s, DType::I32)),
        ((s, DType::I32), (&[4], DType::I32), (s, DType::Bool)),
        ((s, DType::I32), (&[3], DType::I32), (&[3], DType::Bool)),
        (
            (&[1; 7], DType::I32),
            (&[1; 7], DType::I32),
            (&[1; 7], DType::Bool),
        ),
    ];
    for (a, b, y) in bad {
        assert!(
            is_shape_error(compare::validate(&p, a, b, y)),
            "{a:?} < {b:?} -> {y:?}"
        );
    }
    let good: [(Arg<'_>, Arg<'_>); 4] = [
        ((&[], DType::F32), (&[], DType::F32)),
        ((&[2, 1], DType::Bool), (&[3], DType::Bool)),
        ((&[0], DType::U64), (&[1], DType::U64)),
        ((&[4, 1, 3], DType::F64), (&[5, 1], DType::F64)),
    ];
    for (a, b) in good {
        let y = super::broadcast_shape(a.0, b.0);
        let r = compare::validate(&p, a, b, (&y, DType::Bool));
        assert_eq!(r, Ok(()), "{a:?} < {b:?}");
    }
}

// ------------------------------------------------------------------------------------------- logical

/// An And, Or or Xor of two broadcasting Bool operands.
pub type LogicalCase = TwoOperands<LogicalParams>;

/// A Bool element: 0 or 1, now and then another non-zero byte (which reads as true).
fn bool_byte() -> BoxedStrategy<Num> {
    prop_oneof![8 => 0i128..=1, 1 => 2i128..=255]
        .prop_map(Num::Int)
        .boxed()
}

/// Any logical op over Bool operands of rank 0 to 4 that broadcast.
pub fn logical_case() -> impl Strategy<Value = LogicalCase> {
    let op = proptest::sample::select(vec![LogicalOp::And, LogicalOp::Or, LogicalOp::Xor]);
    (op, broadcast_shapes(2)).prop_flat_map(|(op, shapes)| {
        two_operands(LogicalParams { op }, shapes, |dims| {
            tensor_with(DType::Bool, dims, bool_byte())
        })
    })
}

/// The truth of a Bool element: any non-zero byte.
fn truth(v: Num) -> bool {
    v.int() != 0
}

fn run_logical(
    k: &Kernels,
    p: &LogicalParams,
    a: &Tensor,
    b: &Tensor,
    y_dims: &[usize],
) -> Vec<Num> {
    run(&[a, b], DType::Bool, y_dims, |x, y| {
        let typed = "bool bytes are u8s";
        (k.logical)(
            p,
            x[0].typed::<u8>().expect(typed),
            x[1].typed::<u8>().expect(typed),
            y.typed::<u8>().expect(typed),
        );
    })
}

/// The table's logical op against its truth table, by explicit index mapping.
pub fn check_logical(k: &Kernels, c: &LogicalCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(c.validate_with(DType::Bool, logical::validate), Ok(()));
    let got = run_logical(k, &c.p, &c.a, &c.b, &c.y_dims);
    let want: Vec<Num> = c
        .operands()
        .map(|(u, v)| {
            let (u, v) = (truth(u), truth(v));
            let r = match c.p.op {
                LogicalOp::And => u && v,
                LogicalOp::Or => u || v,
                LogicalOp::Xor => u != v,
            };
            Num::Int(i128::from(r))
        })
        .collect();
    assert_same(&got, &want)
}

/// A Not over a Bool tensor of rank 0 to 4.
#[derive(Clone, Debug)]
pub struct NotCase {
    x: Tensor,
}

/// A Bool tensor of rank 0 to 4.
pub fn not_case() -> impl Strategy<Value = NotCase> {
    proptest::collection::vec(dim(), 0..=4)
        .prop_flat_map(|dims| tensor_with(DType::Bool, dims, bool_byte()))
        .prop_map(|x| NotCase { x })
}

fn run_not(k: &Kernels, x: &Tensor) -> Vec<Num> {
    run(&[x], DType::Bool, &x.dims, |x, y| {
        let typed = "bool bytes are u8s";
        (k.not)(
            x[0].typed::<u8>().expect(typed),
            y.typed::<u8>().expect(typed),
        );
    })
}

/// The table's Not: 1 for a zero byte, 0 for any other.
pub fn check_not(k: &Kernels, c: &NotCase) -> Result<(), TestCaseError> {
    let x = &c.x;
    prop_assert_eq!(
        logical::validate_not((&x.dims, x.dtype), (&x.dims, DType::Bool)),
        Ok(())
    );
    let got = run_not(k, x);
    let want: Vec<Num> = x
        .values
        .iter()
        .map(|&v| Num::Int(i128::from(!truth(v))))
        .collect();
    assert_same(&got, &want)
}

/// Hand-computed truth tables, with broadcasting and bytes other than 0 and 1.
pub fn known_logical(k: &Kernels) {
    let mut known = Known::default();
    let p = |op| LogicalParams { op };
    let col = Tensor::ints(DType::Bool, &[2, 1], &[0, 1]);
    let row = Tensor::ints(DType::Bool, &[2], &[0, 1]);
    let y = run_logical(k, &p(LogicalOp::And), &col, &row, &[2, 2]);
    known.check(&y, &ints(&[0, 0, 0, 1]));
    let y = run_logical(k, &p(LogicalOp::Or), &col, &row, &[2, 2]);
    known.check(&y, &ints(&[0, 1, 1, 1]));
    let y = run_logical(k, &p(LogicalOp::Xor), &col, &row, &[2, 2]);
    known.check(&y, &ints(&[0, 1, 1, 0]));
    // 2 and 255 are true: true xor true is false, and results are 0 or 1.
    let a = Tensor::ints(DType::Bool, &[2], &[2, 255]);
    let b = Tensor::ints(DType::Bool, &[2], &[1, 0]);
    let y = run_logical(k, &p(LogicalOp::Xor), &a, &b, &[2]);
    known.check(&y, &ints(&[0, 1]));
    let y = run_logical(k, &p(LogicalOp::And), &a, &b, &[2]);
    known.check(&y, &ints(&[1, 0]));
    let x = Tensor::ints(DType::Bool, &[3], &[0, 1, 7]);
    known.check(&run_not(k, &x), &ints(&[1, 0, 0]));
    let s = Tensor::ints(DType::Bool, &[], &[0]);
    known.check(&run_not(k, &s), &ints(&[1]));
    known.finish();
}

/// `validate` rejects tensors that are not Bool and shapes that do not broadcast; `validate_not` a
/// non-bool tensor and an output of other dims.
pub fn logical_validate_rejects() {
    let p = LogicalParams { op: LogicalOp::And };
    let s: &[usize] = &[2, 3];
    let bad: [(Arg<'_>, Arg<'_>, Arg<'_>); 6] = [
        ((s, DType::U8), (s, DType::Bool), (s, DType::Bool)),
        ((s, DType::Bool), (s, DType::I8), (s, DType::Bool)),
        ((s, DType::Bool), (s, DType::Bool), (s, DType::U8)),
        ((s, DType::Bool), (&[2], DType::Bool), (s, DType::Bool)),
        (
            (s, DType::Bool),
            (&[3], DType::Bool),
            (&[2, 3, 1], DType::Bool),
        ),
        (
            (&[2, 1], DType::Bool),
            (&[3], DType::Bool),
            (&[2, 1], DType::Bool),
        ),
    ];
    for (a, b, y) in bad {
        assert!(
            is_shape_error(logical::validate(&p, a, b, y)),
            "{a:?} and {b:?} -> {y:?}"
        );
    }
    let y: &[usize] = &[2, 3];
    let r = logical::validate(
        &p,
        (&[2, 1], DType::Bool),
        (&[3], DType::Bool),
        (y, DType::Bool),
    );
    assert_eq!(r, Ok(()));
    let bad_not: [(Arg<'_>, Arg<'_>); 4] = [
        ((s, DType::U8), (s, DType::Bool)),
        ((s, DType::Bool), (s, DType::U8)),
        ((s, DType::Bool), (&[3, 2], DType::Bool)),
        ((s, DType::Bool), (&[6], DType::Bool)),
    ];
    for (x, y) in bad_not {
        assert!(
            is_shape_error(logical::validate_not(x, y)),
            "not {x:?} -> {y:?}"
        );
    }
    assert_eq!(
        logical::validate_not((&[], DType::Bool), (&[], DType::Bool)),
        Ok(())
    );
}
