//! `Where`: `cond ? a : b` with three-way broadcasting.

use ember_core::ops::math::where_op;
use ember_core::{DType, Kernels};
use proptest::prelude::*;

use super::{
    assert_same, broadcast_shapes, floats, ints, is_shape_error, numel, run, tensor, unflat, Arg,
    Known, Num, Tensor, ALL,
};

/// A `Where` over a Bool condition and two branches of one dtype, all three broadcasting.
#[derive(Clone, Debug)]
pub struct WhereCase {
    cond: Tensor,
    a: Tensor,
    b: Tensor,
    y_dims: Vec<usize>,
}

/// Any dtype, three operands of rank 0 to 4 that broadcast together.
pub fn where_case() -> impl Strategy<Value = WhereCase> {
    (proptest::sample::select(ALL.to_vec()), broadcast_shapes(3))
        .prop_flat_map(|(dtype, (shapes, y_dims))| {
            (
                tensor(DType::Bool, shapes[0].clone()),
                tensor(dtype, shapes[1].clone()),
                tensor(dtype, shapes[2].clone()),
                Just(y_dims),
            )
        })
        .prop_map(|(cond, a, b, y_dims)| WhereCase { cond, a, b, y_dims })
}

fn run_where(k: &Kernels, cond: &Tensor, a: &Tensor, b: &Tensor, y_dims: &[usize]) -> Vec<Num> {
    run(&[cond, a, b], a.dtype, y_dims, |x, y| {
        (k.where_select)(x[0], x[1], x[2], y)
    })
}

/// The table's `Where` against the definition, by explicit index mapping.
pub fn check_where(k: &Kernels, c: &WhereCase) -> Result<(), TestCaseError> {
    let (cond, a, b) = (&c.cond, &c.a, &c.b);
    prop_assert_eq!(
        where_op::validate(
            (&cond.dims, cond.dtype),
            (&a.dims, a.dtype),
            (&b.dims, b.dtype),
            (&c.y_dims, a.dtype)
        ),
        Ok(())
    );
    let got = run_where(k, cond, a, b, &c.y_dims);
    let want: Vec<Num> = (0..numel(&c.y_dims))
        .map(|i| {
            let index = unflat(i, &c.y_dims);
            if cond.broadcast_at(&index).int() != 0 {
                a.broadcast_at(&index)
            } else {
                b.broadcast_at(&index)
            }
        })
        .collect();
    assert_same(&got, &want)
}

/// Hand-computed selections.
pub fn known_where(k: &Kernels) {
    let mut known = Known::default();
    // A [2, 1] condition picks rows from a [3] row or a scalar: [[1, 2, 3], [9, 9, 9]].
    let cond = Tensor::ints(DType::Bool, &[2, 1], &[1, 0]);
    let a = Tensor::ints(DType::I64, &[3], &[1, 2, 3]);
    let b = Tensor::ints(DType::I64, &[], &[9]);
    let y = run_where(k, &cond, &a, &b, &[2, 3]);
    known.check(&y, &ints(&[1, 2, 3, 9, 9, 9]));
    // Each operand broadcast on a different axis: cond [3], a [2, 1], b [2, 3].
    let cond = Tensor::ints(DType::Bool, &[3], &[1, 0, 1]);
    let a = Tensor::floats(DType::F64, &[2, 1], &[-0.0, f64::NAN]);
    let b = Tensor::floats(DType::F64, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let y = run_where(k, &cond, &a, &b, &[2, 3]);
    known.check(&y, &floats(&[-0.0, 2.0, -0.0, f64::NAN, 5.0, f64::NAN]));
    // The output larger than every operand: cond [2, 1, 1], a [1, 2, 1], b [2].
    let cond = Tensor::ints(DType::Bool, &[2, 1, 1], &[0, 1]);
    let a = Tensor::ints(DType::U8, &[1, 2, 1], &[200, 201]);
    let b = Tensor::ints(DType::U8, &[2], &[7, 8]);
    let y = run_where(k, &cond, &a, &b, &[2, 2, 2]);
    known.check(&y, &ints(&[7, 8, 7, 8, 200, 200, 201, 201]));
    // Bool branches, all scalars.
    let t = Tensor::ints(DType::Bool, &[], &[1]);
    let f = Tensor::ints(DType::Bool, &[], &[0]);
    known.check(&run_where(k, &f, &t, &f, &[]), &ints(&[0]));
    known.finish();
}

/// `validate` rejects a non-bool condition, branches or output of different dtypes, float16, and
/// shapes that do not broadcast three ways.
pub fn where_validate_rejects() {
    let s: &[usize] = &[2, 3];
    let bad: [(Arg<'_>, Arg<'_>, Arg<'_>, Arg<'_>); 10] = [
        (
            (s, DType::U8),
            (s, DType::I32),
            (s, DType::I32),
            (s, DType::I32),
        ),
        (
            (s, DType::I32),
            (s, DType::I32),
            (s, DType::I32),
            (s, DType::I32),
        ),
        (
            (s, DType::Bool),
            (s, DType::I32),
            (s, DType::I64),
            (s, DType::I32),
        ),
        (
            (s, DType::Bool),
            (s, DType::I32),
            (s, DType::I32),
            (s, DType::I64),
        ),
        (
            (s, DType::Bool),
            (s, DType::F16),
            (s, DType::F16),
            (s, DType::F32),
        ),
        (
            (&[4], DType::Bool),
            (s, DType::F32),
            (s, DType::F32),
            (s, DType::F32),
        ),
        (
            (s, DType::Bool),
            (&[2], DType::F32),
            (s, DType::F32),
            (s, DType::F32),
        ),
        (
            (s, DType::Bool),
            (s, DType::F32),
            (&[3, 1], DType::F32),
            (s, DType::F32),
        ),
        (
            (s, DType::Bool),
            (s, DType::F32),
            (s, DType::F32),
            (&[3, 2], DType::F32),
        ),
        (
            (&[2, 1], DType::Bool),
            (&[3], DType::F32),
            (&[3], DType::F32),
            (&[3], DType::F32),
        ),
    ];
    for (cond, a, b, y) in bad {
        let r = where_op::validate(cond, a, b, y);
        assert!(is_shape_error(r), "{cond:?} ? {a:?} : {b:?} -> {y:?}");
    }
    let good: [(Arg<'_>, Arg<'_>, Arg<'_>, Arg<'_>); 4] = [
        (
            (&[], DType::Bool),
            (&[], DType::I8),
            (&[], DType::I8),
            (&[], DType::I8),
        ),
        (
            (&[2, 1], DType::Bool),
            (&[3], DType::U64),
            (&[], DType::U64),
            (s, DType::U64),
        ),
        (
            (&[3], DType::Bool),
            (&[2, 1], DType::Bool),
            (&[1], DType::Bool),
            (s, DType::Bool),
        ),
        (
            (&[0, 1], DType::Bool),
            (&[3], DType::F64),
            (&[1, 3], DType::F64),
            (&[0, 3], DType::F64),
        ),
    ];
    for (cond, a, b, y) in good {
        assert_eq!(
            where_op::validate(cond, a, b, y),
            Ok(()),
            "{cond:?} ? {a:?} : {b:?}"
        );
    }
}
