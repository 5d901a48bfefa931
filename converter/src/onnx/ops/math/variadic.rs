//! ONNX `Min`, `Max`, `Sum` and `Mean`: one to N inputs with numpy broadcasting, imported as a chain of
//! binary ops (`((x0 op x1) op x2) ...`); `Mean` is the `Add` chain divided by N. A single input is
//! passed through.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Min`, `Max`, `Sum` or `Mean`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op_type = ctx.node.op_type.clone();
    let op = match op_type.as_str() {
        "Min" => BinaryOp::Min,
        "Max" => BinaryOp::Max,
        "Sum" | "Mean" => BinaryOp::Add,
        other => return Err(ctx.err(format!("{other} is not a variadic op"))),
    };
    // The op table admits one input or more.
    let n = ctx.node.input.len();
    let inputs = (0..n)
        .map(|i| ctx.input(i, "data_0..N"))
        .collect::<Result<Vec<_>, _>>()?;
    let act = Activation::None;
    let binary = |op| Op::Binary { op, act };
    let mut acc = inputs[0];
    for (i, &x) in inputs.iter().enumerate().skip(1) {
        acc = ctx.emit_tmp(&format!("{}{i}", op.name()), binary(op), vec![acc, x])?;
    }
    if op_type == "Mean" && n > 1 {
        let count = ctx.add_constant("count", vec![], ConstData::F32(vec![n as f32]));
        acc = ctx.emit_tmp("mean", binary(BinaryOp::Div), vec![acc, count])?;
    }
    if n == 1 {
        // One input is the output; a Reshape to the same shape keeps the output a distinct tensor,
        // and the identity pass removes it.
        let shape = ctx.shape(acc);
        if ctx.graph().is_const(acc) {
            return ctx.bind_output(acc);
        }
        ctx.emit(Op::Reshape { shape }, vec![acc])?;
        return Ok(());
    }
    ctx.finish(acc)
}
