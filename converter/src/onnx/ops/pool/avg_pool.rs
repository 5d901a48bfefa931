//! ONNX `AveragePool` (1-D or 2-D) to [`Op::AvgPool`], with `count_include_pad`.

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::pool::{emit_pool, window_of};
use crate::ConvertError;

/// Imports `AveragePool`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let include = ctx.attr_int("count_include_pad")?.unwrap_or(0) != 0;
    let p = window_of(ctx, &ctx.shape(x), include)?;
    emit_pool(ctx, Op::AvgPool(p), x)
}
