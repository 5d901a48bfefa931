//! Boolean logic with broadcasting: And, Or, Xor on two Bool tensors, and Not on one. Bools are bytes
//! holding 0 or 1; any non-zero byte reads as true, and results are always 0 or 1.

pub use crate::schema::{LogicalOp, LogicalParams};

use crate::ops::element::TypedDims;
use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims, ensure};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// Checks that `a` and `b` broadcast to `y` and that all three are Bool.
pub fn validate(
    _p: &LogicalParams,
    a: TypedDims<'_>,
    b: TypedDims<'_>,
    y: TypedDims<'_>,
) -> Result<(), Error> {
    for dims in [a.0, b.0, y.0] {
        check_dims(dims)?;
    }
    ensure(
        a.1 == DType::Bool && b.1 == DType::Bool && y.1 == DType::Bool,
        "logical op on a tensor that is not bool",
    )?;
    check_broadcast(a.0, b.0, y.0)
}

/// `y = a op b` with broadcasting.
pub fn logical(p: &LogicalParams, a: In<'_, u8>, b: In<'_, u8>, y: Out<'_, u8>) {
    match p.op {
        LogicalOp::And => broadcast_zip(a, b, y, |u, v| u8::from(u != 0 && v != 0)),
        LogicalOp::Or => broadcast_zip(a, b, y, |u, v| u8::from(u != 0 || v != 0)),
        LogicalOp::Xor => broadcast_zip(a, b, y, |u, v| u8::from((u != 0) != (v != 0))),
    }
}

/// Checks that `x` and `y` are Bool tensors of one shape.
pub fn validate_not(x: TypedDims<'_>, y: TypedDims<'_>) -> Result<(), Error> {
    check_dims(x.0)?;
    ensure(x.0 == y.0, "not: output dims differ from input")?;
    ensure(
        x.1 == DType::Bool && y.1 == DType::Bool,
        "not: tensor is not bool",
    )
}

/// `y = !x`.
pub fn not(x: In<'_, u8>, y: Out<'_, u8>) {
    for (out, &v) in y.data.iter_mut().zip(x.data) {
        *out = u8::from(v == 0);
    }
}

/// Signature of a binary logical op on Bool tensors (And, Or, Xor).
pub type LogicalFn = fn(&LogicalParams, In<'_, u8>, In<'_, u8>, Out<'_, u8>);

op_entry! {
    /// The [`Kernels::logical`](crate::Kernels::logical) entry, which runs
    /// [`OpKind::Logical`](crate::OpKind::Logical).
    Logical: LogicalFn = logical, LogicalParams, Own;
    validate |p, o| shape_reason(validate(p, o.typed(0), o.typed(1), o.out_typed()));
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, out(a.y)?);
}

/// Signature of logical Not.
pub type NotFn = fn(In<'_, u8>, Out<'_, u8>);

op_entry! {
    /// The [`Kernels::not`](crate::Kernels::not) entry, which runs
    /// [`OpKind::Not`](crate::OpKind::Not).
    Not: NotFn = not, (), Own;
    validate |_, o| shape_reason(validate_not(o.typed(0), o.out_typed()));
    run |kernel, _, a| kernel(a.x(0)?, out(a.y)?);
}
