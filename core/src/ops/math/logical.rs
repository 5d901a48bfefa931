//! Boolean logic with broadcasting: And, Or, Xor on two Bool tensors, and Not on one. Bools are bytes
//! holding 0 or 1; any non-zero byte reads as true, and results are always 0 or 1.

pub use crate::schema::{LogicalOp, LogicalParams};

use crate::ops::entry::{out, shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims, ensure, Checked};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// Checks that `a` and `b` broadcast to `y` and that all three are Bool.
pub fn validate(
    _p: &LogicalParams,
    a: (&[usize], DType),
    b: (&[usize], DType),
    y: (&[usize], DType),
) -> Result<(), Error> {
    check_dims(a.0)?;
    check_dims(b.0)?;
    check_dims(y.0)?;
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
pub fn validate_not(x: (&[usize], DType), y: (&[usize], DType)) -> Result<(), Error> {
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

/// The [`Kernels::logical`](crate::Kernels::logical) entry, which runs
/// [`OpKind::Logical`](crate::OpKind::Logical).
pub struct Logical;

impl KernelEntry for Logical {
    type Kernel = LogicalFn;
    const REFERENCE: LogicalFn = logical;
    const STUB: LogicalFn = |_, _, _, _| {};
}

impl OpEntry for Logical {
    type Params = LogicalParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &LogicalParams, o: &impl Operands) -> Checked {
        shape_reason(validate(p, o.typed(0), o.typed(1), o.out_typed()))
    }

    #[inline(always)]
    fn run(kernel: LogicalFn, p: &LogicalParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        kernel(p, a.x(0)?, a.x(1)?, out(a.y)?);
        Ok(())
    }
}

/// Signature of logical Not.
pub type NotFn = fn(In<'_, u8>, Out<'_, u8>);

/// The [`Kernels::not`](crate::Kernels::not) entry, which runs
/// [`OpKind::Not`](crate::OpKind::Not).
pub struct Not;

impl KernelEntry for Not {
    type Kernel = NotFn;
    const REFERENCE: NotFn = not;
    const STUB: NotFn = |_, _| {};
}

impl OpEntry for Not {
    type Params = ();
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &(), o: &impl Operands) -> Checked {
        let () = p;
        shape_reason(validate_not(o.typed(0), o.out_typed()))
    }

    #[inline(always)]
    fn run(kernel: NotFn, p: &(), a: OpArgs<'_, '_>) -> Result<(), Error> {
        let () = p;
        kernel(a.x(0)?, out(a.y)?);
        Ok(())
    }
}
