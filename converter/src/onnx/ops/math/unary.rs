//! ONNX `Relu`, `Sigmoid`, `Tanh` to [`Op::Unary`].

use ember_core::ops::math::unary::UnaryOp;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Relu`, `Sigmoid` or `Tanh`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op = match ctx.node.op_type.as_str() {
        "Relu" => UnaryOp::Relu,
        "Sigmoid" => UnaryOp::Sigmoid,
        "Tanh" => UnaryOp::Tanh,
        other => return Err(ctx.err(format!("{other} is not a unary op"))),
    };
    let x = ctx.input(0, "X")?;
    ctx.emit(Op::Unary(op), vec![x])?;
    Ok(())
}
