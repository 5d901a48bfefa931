//! ONNX `Add`, `Sub`, `Mul`, `Div` (numpy broadcasting) to [`Op::Binary`]. A constant operand stays a
//! constant and is stored with the weights.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Add`, `Sub`, `Mul` or `Div`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op = match ctx.node.op_type.as_str() {
        "Add" => BinaryOp::Add,
        "Sub" => BinaryOp::Sub,
        "Mul" => BinaryOp::Mul,
        "Div" => BinaryOp::Div,
        other => return Err(ctx.err(format!("{other} is not a binary op"))),
    };
    let a = ctx.input(0, "A")?;
    let b = ctx.input(1, "B")?;
    let act = Activation::None;
    ctx.emit(Op::Binary { op, act }, vec![a, b])?;
    Ok(())
}
