//! ONNX `IsNaN` and `IsInf` (a BOOL output shaped like the float input), decomposed into
//! [`Op::Compare`], whose comparisons follow IEEE 754 (every comparison with NaN is false, Equal too):
//!
//! - `IsNaN(x)` is `Not(Equal(x, x))`;
//! - `IsInf(x)` is `Equal(x, +inf)` (`detect_positive`, default 1), `Equal(x, -inf)`
//!   (`detect_negative`, default 1), their `Or` when both are set, and a constant all-false tensor
//!   when neither is.
//!
//! The input is FLOAT, DOUBLE or FLOAT16 (the infinities are constants of its dtype).

use crate::ir::{ConstData, DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;
use ember_core::ops::math::compare::CompareOp;
use ember_core::ops::math::logical::LogicalOp;

/// The float input `X` of an `IsNaN` or `IsInf` node.
fn float_input(ctx: &NodeCtx<'_>) -> Result<TensorId, ConvertError> {
    let x = ctx.input(0, "X")?;
    let dtype = ctx.graph().tensor(x).dtype;
    if !matches!(dtype, DType::F32 | DType::F64 | DType::F16) {
        return Err(ctx.err(format!(
            "input X is {}; {} takes FLOAT, DOUBLE or FLOAT16",
            dtype.name(),
            ctx.node.op_type
        )));
    }
    Ok(x)
}

/// Imports `IsNaN`.
pub fn import_is_nan(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = float_input(ctx)?;
    let equal = ctx.emit_tmp("equal", Op::Compare(CompareOp::Equal), vec![x, x])?;
    ctx.emit(Op::Not, vec![equal])?;
    Ok(())
}

/// Imports `IsInf`.
pub fn import_is_inf(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = float_input(ctx)?;
    let flag = |name: &str| -> Result<bool, ConvertError> {
        match ctx.attr_int(name)?.unwrap_or(1) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ctx.err(format!("attribute {name}={v} must be 0 or 1"))),
        }
    };
    let (positive, negative) = (flag("detect_positive")?, flag("detect_negative")?);
    let dtype = ctx.graph().tensor(x).dtype;
    let mut found = Vec::new();
    for (detect, value, name) in [
        (positive, f32::INFINITY, "positive"),
        (negative, f32::NEG_INFINITY, "negative"),
    ] {
        if detect {
            let inf = ctx.imp.graph.add_constant_of(
                &format!("{}.{name}_infinity", ctx.name),
                vec![],
                ConstData::F32(vec![value]),
                dtype,
            );
            let op = Op::Compare(CompareOp::Equal);
            found.push(ctx.emit_tmp(&format!("is_{name}"), op, vec![x, inf])?);
        }
    }
    let y = match found[..] {
        [a, b] => ctx.emit_tmp("either", Op::Logical(LogicalOp::Or), vec![a, b])?,
        [one] => one,
        _ => {
            // Neither sign is detected: the answer is false everywhere, known now.
            let shape = ctx.shape(x);
            let n = shape.iter().product();
            let name = format!("{}.none", ctx.name);
            let none = ConstData::I64(vec![0; n]);
            ctx.imp
                .graph
                .add_constant_of(&name, shape, none, DType::Bool)
        }
    };
    ctx.finish(y)
}
