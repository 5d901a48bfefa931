//! ONNX `Cast` and `CastLike` (to the type of its second input). A cast to the value's own type is an
//! identity, any other a runtime [`Op::Cast`] (float16 and strings are not runtime types); a cast of a
//! constant folds as it is added (`ir::emit::add_node`), with the runtime's own conversions.

use crate::ir::{Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::proto::data_type;
use crate::onnx::tensor::dtype_of;
use crate::ConvertError;

/// Imports `Cast`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let to = ctx
        .attr_int("to")?
        .ok_or_else(|| ctx.err("attribute to is required"))?;
    let to = i32::try_from(to).map_err(|_| ctx.err(format!("attribute to={to} is not a type")))?;
    cast(ctx, x, to)
}

/// Imports `CastLike`.
pub fn import_like(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let target = ctx.input(1, "target_type")?;
    let to = crate::onnx::tensor::onnx_type(ctx.graph().tensor(target).dtype);
    cast(ctx, x, to)
}

/// `x` cast to ONNX data type `to`.
fn cast(ctx: &mut NodeCtx<'_>, x: TensorId, to: i32) -> Result<(), ConvertError> {
    let t = ctx.graph().tensor(x);
    let shape = t.shape.clone();
    let from = t.dtype;
    let Some(dtype) = dtype_of(to) else {
        return Err(ctx.err(format!(
            "a cast to {} ({to}) is not supported",
            data_type::name(to)
        )));
    };
    if dtype == from {
        ctx.emit(Op::Reshape { shape }, vec![x])?;
    } else {
        ctx.emit(Op::Cast { to: dtype }, vec![x])?;
    }
    Ok(())
}
