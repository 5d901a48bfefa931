//! Element-wise comparisons with broadcasting: Equal, Less, LessOrEqual, Greater, GreaterOrEqual.
//! Both inputs share one dtype (any); the output is Bool. Comparisons with NaN are false
//! (Equal too), as in IEEE arithmetic and numpy.

pub use crate::schema::{CompareOp, CompareParams};

use crate::ops::element::{AnyIn, AnyOut, TypedDims};
use crate::ops::entry::{op_entry, shape_reason};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims, ensure};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// Checks shapes (`a` and `b` broadcast to `y`) and dtypes (`a` and `b` the same; `y` Bool).
pub fn validate(
    _p: &CompareParams,
    a: TypedDims<'_>,
    b: TypedDims<'_>,
    y: TypedDims<'_>,
) -> Result<(), Error> {
    for dims in [a.0, b.0, y.0] {
        check_dims(dims)?;
    }
    ensure(a.1 == b.1, "comparison inputs have different dtypes")?;
    ensure(y.1 == DType::Bool, "comparison output is not bool")?;
    check_broadcast(a.0, b.0, y.0)
}

/// `y = a op b` (1 or 0) with broadcasting.
pub fn compare(p: &CompareParams, a: AnyIn<'_>, b: AnyIn<'_>, y: AnyOut<'_>) {
    let Some(y) = y.typed::<u8>() else { return };
    crate::with_element!(a.dtype, T => {
        if let (Some(a), Some(b)) = (a.typed::<T>(), b.typed::<T>()) {
            compare_typed(p.op, a, b, y);
        }
    })
}

fn compare_typed<T: PartialOrd + Copy>(op: CompareOp, a: In<'_, T>, b: In<'_, T>, y: Out<'_, u8>) {
    match op {
        CompareOp::Equal => broadcast_zip(a, b, y, |u, v| u8::from(u == v)),
        CompareOp::Less => broadcast_zip(a, b, y, |u, v| u8::from(u < v)),
        CompareOp::LessOrEqual => broadcast_zip(a, b, y, |u, v| u8::from(u <= v)),
        CompareOp::Greater => broadcast_zip(a, b, y, |u, v| u8::from(u > v)),
        CompareOp::GreaterOrEqual => broadcast_zip(a, b, y, |u, v| u8::from(u >= v)),
    }
}

/// Signature of a comparison (any dtype in, Bool out).
pub type CompareFn = fn(&CompareParams, AnyIn<'_>, AnyIn<'_>, AnyOut<'_>);

op_entry! {
    /// The [`Kernels::compare`](crate::Kernels::compare) entry, which runs
    /// [`OpKind::Compare`](crate::OpKind::Compare).
    Compare: CompareFn = compare, CompareParams, Own;
    validate |p, o| shape_reason(validate(p, o.typed(0), o.typed(1), o.out_typed()));
    run |kernel, p, a| kernel(p, a.any(0), a.any(1), a.y);
}
