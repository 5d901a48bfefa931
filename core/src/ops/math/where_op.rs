//! `Where`: `y = cond ? a : b` element-wise, with three-way numpy broadcasting. `cond` is Bool; `a`, `b`
//! and `y` share one dtype (any).

use crate::ops::element::{AnyIn, AnyOut, TypedDims};
use crate::ops::entry::{op_entry, shape_reason};
use crate::ops::shape::{broadcast_zip3, check_broadcast, check_dims, ensure};
use crate::schema::{DType, MAX_RANK};
use crate::Error;

/// Checks dtypes (`cond` Bool, `a`, `b`, `y` equal) and that the three inputs broadcast to `y`.
pub fn validate(
    cond: TypedDims<'_>,
    a: TypedDims<'_>,
    b: TypedDims<'_>,
    y: TypedDims<'_>,
) -> Result<(), Error> {
    for dims in [cond.0, a.0, b.0, y.0] {
        check_dims(dims)?;
    }
    ensure(cond.1 == DType::Bool, "where: condition is not bool")?;
    ensure(
        a.1 == b.1 && b.1 == y.1,
        "where: the two branches and the output differ in dtype",
    )?;
    // Broadcast a with b first, then that shape with cond: the output must be the three-way result.
    let rank = a.0.len().max(b.0.len());
    ensure(rank <= MAX_RANK, "where: rank above 6")?;
    let mut ab = [0usize; MAX_RANK];
    for i in 0..rank {
        let pick = |d: &[usize]| {
            let off = rank - d.len();
            if i < off {
                1
            } else {
                d[i - off]
            }
        };
        let (da, db) = (pick(a.0), pick(b.0));
        ab[i] = if da == 1 { db } else { da };
    }
    check_broadcast(a.0, b.0, &ab[..rank])?;
    check_broadcast(cond.0, &ab[..rank], y.0)
}

/// `y[i] = cond[i] != 0 ? a[i] : b[i]` with broadcasting.
pub fn where_select(cond: AnyIn<'_>, a: AnyIn<'_>, b: AnyIn<'_>, y: AnyOut<'_>) {
    let Some(cond) = cond.typed::<u8>() else {
        return;
    };
    crate::with_element!(y.dtype, T => {
        if let (Some(a), Some(b), Some(y)) = (a.typed::<T>(), b.typed::<T>(), y.typed::<T>()) {
            broadcast_zip3(cond, a, b, y, |c, u, v| if c != 0 { u } else { v });
        }
    })
}

/// Signature of `Where` (`cond, a, b`).
pub type WhereFn = fn(AnyIn<'_>, AnyIn<'_>, AnyIn<'_>, AnyOut<'_>);

op_entry! {
    /// The [`Kernels::where_select`](crate::Kernels::where_select) entry, which runs
    /// [`OpKind::Where`](crate::OpKind::Where).
    WhereSelect: WhereFn = where_select, (), Own;
    validate |_, o| shape_reason(validate(o.typed(0), o.typed(1), o.typed(2), o.out_typed()));
    run |kernel, _, a| kernel(a.any(0), a.any(1), a.any(2), a.y);
}
