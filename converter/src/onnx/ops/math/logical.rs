//! ONNX `And`, `Or`, `Xor` (numpy broadcasting) and `Not`, on BOOL tensors, to [`Op::Logical`] and
//! [`Op::Not`].

use ember_core::ops::math::logical::LogicalOp;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `And`, `Or` or `Xor`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op = match ctx.node.op_type.as_str() {
        "And" => LogicalOp::And,
        "Or" => LogicalOp::Or,
        "Xor" => LogicalOp::Xor,
        other => return Err(ctx.err(format!("{other} is not a logical op"))),
    };
    super::emit_a_b(ctx, Op::Logical(op))
}

/// Imports `Not`.
pub fn import_not(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    ctx.emit(Op::Not, vec![x])?;
    Ok(())
}
