//! ONNX `Equal`, `Less`, `LessOrEqual`, `Greater`, `GreaterOrEqual` (numpy broadcasting, both inputs of
//! one type, a BOOL output) to [`Op::Compare`].

use ember_core::ops::math::compare::CompareOp;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports a comparison.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op = match ctx.node.op_type.as_str() {
        "Equal" => CompareOp::Equal,
        "Less" => CompareOp::Less,
        "LessOrEqual" => CompareOp::LessOrEqual,
        "Greater" => CompareOp::Greater,
        "GreaterOrEqual" => CompareOp::GreaterOrEqual,
        other => return Err(ctx.err(format!("{other} is not a comparison"))),
    };
    super::emit_a_b(ctx, Op::Compare(op))
}
