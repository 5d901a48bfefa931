//! ArgMax and ArgMin along one axis, to int64: ties by `select_last_index`, NaN wins.

use std::cmp::Ordering;

use ember_core::ops::nn::arg_reduce::{self, ArgReduceParams};
use ember_core::{DType, Kernels};
use proptest::collection::vec;
use proptest::prelude::*;

use super::{
    assert_same, dim, element, flat, ints, is_shape_error, numel, run, tensor_with, unflat, Arg,
    Known, Num, Tensor, ALL,
};

/// An arg-reduction of one tensor.
#[derive(Clone, Debug)]
pub struct ArgReduceCase {
    p: ArgReduceParams,
    x: Tensor,
    y_dims: Vec<usize>,
}

/// The output dims: `x`'s with the axis kept as 1 or removed.
fn reduced_dims(p: &ArgReduceParams, x_dims: &[usize]) -> Vec<usize> {
    let axis = usize::from(p.axis);
    let mut y = x_dims.to_vec();
    if p.keepdims {
        y[axis] = 1;
    } else {
        y.remove(axis);
    }
    y
}

/// An element for arg-reductions: half the time from a handful of values, so that ties are common.
fn tie_prone(d: DType) -> BoxedStrategy<Num> {
    let few = match d {
        DType::F32 | DType::F64 => proptest::sample::select(vec![-1.0, 0.0, 2.0, f64::NAN])
            .prop_map(Num::Float)
            .boxed(),
        _ => (0i128..=2).prop_map(Num::Int).boxed(),
    };
    prop_oneof![few, element(d)].boxed()
}

/// Any dtype but Bool, rank 1 to 4, any axis (of at least one element), both flags.
pub fn arg_reduce_case() -> impl Strategy<Value = ArgReduceCase> {
    let dtypes: Vec<DType> = ALL.into_iter().filter(|&d| d != DType::Bool).collect();
    (
        proptest::sample::select(dtypes),
        vec(dim(), 1..=4),
        any::<(bool, bool, bool, prop::sample::Index)>(),
        1usize..=5,
    )
        .prop_flat_map(|(dtype, mut dims, (max, keepdims, last, axis), n)| {
            let axis = axis.index(dims.len());
            dims[axis] = n;
            let p = ArgReduceParams {
                max,
                axis: axis as u8, // below 4
                keepdims,
                select_last_index: last,
            };
            let y_dims = reduced_dims(&p, &dims);
            (
                Just(p),
                tensor_with(dtype, dims, tie_prone(dtype)),
                Just(y_dims),
            )
        })
        .prop_map(|(p, x, y_dims)| ArgReduceCase { p, x, y_dims })
}

/// The order of two exact values, neither NaN.
fn order(u: Num, v: Num) -> Ordering {
    match (u, v) {
        (Num::Int(a), Num::Int(b)) => a.cmp(&b),
        (Num::Float(a), Num::Float(b)) => a.partial_cmp(&b).expect("no NaN here"),
        _ => panic!("values of different kinds: {u:?}, {v:?}"),
    }
}

/// The definition over one line of values: the first NaN if there is one (NaN is the largest and the
/// smallest value; numpy returns the first); otherwise the position of the largest (smallest) value,
/// the first or the last of equal ones.
fn arg_definition(p: &ArgReduceParams, line: &[Num]) -> usize {
    if let Some(at) = line.iter().position(|v| v.is_nan()) {
        return at;
    }
    let want = if p.max {
        Ordering::Greater
    } else {
        Ordering::Less
    };
    let best = line
        .iter()
        .copied()
        .reduce(|b, v| if order(v, b) == want { v } else { b })
        .expect("the axis has an element");
    let mut hits = (0..line.len()).filter(|&k| order(line[k], best) == Ordering::Equal);
    let hit = if p.select_last_index {
        hits.next_back()
    } else {
        hits.next()
    };
    hit.expect("best is in the line")
}

fn run_arg(k: &Kernels, p: &ArgReduceParams, x: &Tensor, y_dims: &[usize]) -> Vec<Num> {
    run(&[x], DType::I64, y_dims, |x, y| {
        (k.arg_reduce)(p, x[0], y.typed::<i64>().expect("aligned i64s"));
    })
}

/// The table's ArgMax / ArgMin against the definition: each output's line read by index formula.
pub fn check_arg_reduce(k: &Kernels, c: &ArgReduceCase) -> Result<(), TestCaseError> {
    let x = &c.x;
    prop_assert_eq!(
        arg_reduce::validate(&c.p, (&x.dims, x.dtype), (&c.y_dims, DType::I64)),
        Ok(())
    );
    let got = run_arg(k, &c.p, x, &c.y_dims);
    let axis = usize::from(c.p.axis);
    let want: Vec<Num> = (0..numel(&c.y_dims))
        .map(|i| {
            let mut index = unflat(i, &c.y_dims);
            if !c.p.keepdims {
                index.insert(axis, 0);
            }
            let line: Vec<Num> = (0..x.dims[axis])
                .map(|kk| {
                    index[axis] = kk;
                    x.values[flat(&index, &x.dims)]
                })
                .collect();
            Num::Int(arg_definition(&c.p, &line) as i128)
        })
        .collect();
    assert_same(&got, &want)
}

/// Hand-computed arg-reductions.
pub fn known_arg_reduce(k: &Kernels) {
    let mut known = Known::default();
    let p = |max, axis, keepdims, last| ArgReduceParams {
        max,
        axis,
        keepdims,
        select_last_index: last,
    };
    // [[1, 5, 5], [7, 2, 7]]
    let x = Tensor::ints(DType::I32, &[2, 3], &[1, 5, 5, 7, 2, 7]);
    let y = run_arg(k, &p(true, 1, false, false), &x, &[2]);
    known.check(&y, &ints(&[1, 0]));
    let y = run_arg(k, &p(true, 1, true, true), &x, &[2, 1]);
    known.check(&y, &ints(&[2, 2]));
    let y = run_arg(k, &p(false, 1, false, false), &x, &[2]);
    known.check(&y, &ints(&[0, 1]));
    let y = run_arg(k, &p(true, 0, false, false), &x, &[3]);
    known.check(&y, &ints(&[1, 0, 1]));
    let y = run_arg(k, &p(false, 0, true, false), &x, &[1, 3]);
    known.check(&y, &ints(&[0, 1, 0]));
    // u8 is unsigned (200 is the largest), i8 signed (the same byte, -56, the smallest).
    let x = Tensor::ints(DType::U8, &[3], &[100, 200, 7]);
    known.check(&run_arg(k, &p(true, 0, false, false), &x, &[]), &ints(&[1]));
    let x = Tensor::ints(DType::I8, &[3], &[100, -56, 7]);
    known.check(
        &run_arg(k, &p(false, 0, false, false), &x, &[]),
        &ints(&[1]),
    );
    // The first NaN wins, for ArgMax and ArgMin.
    let nan = f64::NAN;
    let x = Tensor::floats(DType::F32, &[5], &[1.0, nan, 3.0, nan, -1.0]);
    for max in [true, false] {
        let y = run_arg(k, &p(max, 0, false, false), &x, &[]);
        known.check(&y, &ints(&[1]));
    }
    // -0 and +0 tie; infinities are ordinary extremes.
    let x = Tensor::floats(
        DType::F64,
        &[4],
        &[0.0, -0.0, f64::NEG_INFINITY, f64::INFINITY],
    );
    known.check(&run_arg(k, &p(true, 0, false, false), &x, &[]), &ints(&[3]));
    known.check(
        &run_arg(k, &p(false, 0, false, false), &x, &[]),
        &ints(&[2]),
    );
    let x = Tensor::floats(DType::F64, &[2], &[0.0, -0.0]);
    known.check(&run_arg(k, &p(true, 0, false, true), &x, &[]), &ints(&[1]));
    // An axis of one element, and an empty outer axis.
    let x = Tensor::ints(DType::I64, &[2, 1], &[5, 6]);
    known.check(
        &run_arg(k, &p(true, 1, false, false), &x, &[2]),
        &ints(&[0, 0]),
    );
    let x = Tensor::ints(DType::I64, &[0, 3], &[]);
    known.check(&run_arg(k, &p(true, 1, false, false), &x, &[0]), &[]);
    known.finish();
}

/// `validate` rejects an output that is not int64, bool or float16 input, an axis out of range or
/// empty, and output dims that are not the input's reduced.
pub fn arg_reduce_validate_rejects() {
    let p = |axis, keepdims| ArgReduceParams {
        max: true,
        axis,
        keepdims,
        select_last_index: false,
    };
    let s: &[usize] = &[2, 3];
    let bad: [(ArgReduceParams, Arg<'_>, Arg<'_>); 11] = [
        (p(1, false), (s, DType::F32), (&[2], DType::I32)),
        (p(1, false), (s, DType::F32), (&[2], DType::U64)),
        (p(1, false), (s, DType::Bool), (&[2], DType::I64)),
        (p(1, false), (s, DType::F16), (&[2], DType::F16)),
        (p(2, false), (s, DType::F32), (&[2], DType::I64)),
        (p(0, false), (&[], DType::F32), (&[], DType::I64)),
        (p(1, false), (&[2, 0], DType::F32), (&[2], DType::I64)),
        (p(1, false), (s, DType::F32), (&[3], DType::I64)),
        (p(1, false), (s, DType::F32), (&[2, 1], DType::I64)),
        (p(1, true), (s, DType::F32), (&[2], DType::I64)),
        (p(0, true), (s, DType::F32), (&[1, 2], DType::I64)),
    ];
    for (p, x, y) in bad {
        let r = arg_reduce::validate(&p, x, y);
        assert!(is_shape_error(r), "{p:?}: {x:?} -> {y:?}");
    }
    let good: [(ArgReduceParams, Arg<'_>, Arg<'_>); 4] = [
        (p(1, false), (s, DType::U8), (&[2], DType::I64)),
        (p(0, true), (s, DType::F64), (&[1, 3], DType::I64)),
        (p(0, false), (&[4], DType::I64), (&[], DType::I64)),
        (p(1, false), (&[0, 3], DType::I16), (&[0], DType::I64)),
    ];
    for (p, x, y) in good {
        assert_eq!(
            arg_reduce::validate(&p, x, y),
            Ok(()),
            "{p:?}: {x:?} -> {y:?}"
        );
    }
}
