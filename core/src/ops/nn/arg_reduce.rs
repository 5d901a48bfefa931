//! ArgMax and ArgMin along one axis: the index (int64) of the largest or smallest element. Ties give
//! the first index, or the last with `select_last_index`. A NaN wins over every number for both
//! ArgMax and ArgMin, and the first NaN wins even with `select_last_index` (numpy's rule).

pub use crate::schema::ArgReduceParams;

use crate::ops::element::{AnyIn, Element, TypedDims};
use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// Checks dtypes (`x` numeric, `y` I64), that the axis has at least one element, and that `y` is `x`
/// with the axis reduced (kept as 1 or removed).
pub fn validate(p: &ArgReduceParams, x: TypedDims<'_>, y: TypedDims<'_>) -> Result<(), Error> {
    for dims in [x.0, y.0] {
        check_dims(dims)?;
    }
    ensure(y.1 == DType::I64, "arg-reduction output is not int64")?;
    ensure(
        x.1 != DType::Bool,
        "arg-reduction of this dtype is not supported",
    )?;
    let axis = usize::from(p.axis);
    ensure(axis < x.0.len(), "arg-reduction axis is not below the rank")?;
    ensure(x.0[axis] > 0, "arg-reduction over an empty axis")?;
    let same = |i: usize, j: usize| x.0.get(i) == y.0.get(j);
    let ok = if p.keepdims {
        y.0.len() == x.0.len() && y.0[axis] == 1 && (0..x.0.len()).all(|i| i == axis || same(i, i))
    } else {
        y.0.len() + 1 == x.0.len()
            && (0..axis).all(|i| same(i, i))
            && (axis + 1..x.0.len()).all(|i| same(i, i - 1))
    };
    ensure(
        ok,
        "arg-reduction output dims are not the input's with the axis reduced",
    )
}

/// `y = argmax/argmin(x, axis)`.
pub fn arg_reduce(p: &ArgReduceParams, x: AnyIn<'_>, y: Out<'_, i64>) {
    crate::with_element!(x.dtype, T => {
        if let Some(x) = x.typed::<T>() {
            arg_reduce_typed::<T>(p, x, y);
        }
    })
}

fn arg_reduce_typed<T: Element>(p: &ArgReduceParams, x: In<'_, T>, y: Out<'_, i64>) {
    let axis = usize::from(p.axis);
    let n = x.dims[axis];
    let inner: usize = x.dims[axis + 1..].iter().product();
    if n == 0 || inner == 0 {
        return;
    }
    // `better(a, b)`: a replaces the current best b. NaN is never equal to itself, so an unordered pair
    // with a NaN candidate wins once, and nothing beats a NaN best afterwards.
    let better = |a: T, b: T| -> bool {
        let unordered = a.partial_cmp(&b).is_none();
        let b_nan = b.partial_cmp(&b).is_none();
        if b_nan {
            return false;
        }
        if unordered {
            return true;
        }
        if p.max {
            a > b || (p.select_last_index && a == b)
        } else {
            a < b || (p.select_last_index && a == b)
        }
    };
    for (o, chunk) in y.data.chunks_mut(inner).enumerate() {
        let base = o * n * inner;
        for (i, out) in chunk.iter_mut().enumerate() {
            let mut best = x.data[base + i];
            let mut at = 0usize;
            for k in 1..n {
                let v = x.data[base + k * inner + i];
                if better(v, best) {
                    best = v;
                    at = k;
                }
            }
            *out = at as i64;
        }
    }
}

/// Signature of ArgMax / ArgMin.
pub type ArgReduceFn = fn(&ArgReduceParams, AnyIn<'_>, Out<'_, i64>);

op_entry! {
    /// The [`Kernels::arg_reduce`](crate::Kernels::arg_reduce) entry, which runs
    /// [`OpKind::ArgReduce`](crate::OpKind::ArgReduce).
    ArgReduce: ArgReduceFn = arg_reduce, ArgReduceParams, Own;
    validate |p, o| shape_reason(validate(p, o.typed(0), o.out_typed()));
    run |kernel, p, a| kernel(p, a.any(0), out(a.y)?);
}
