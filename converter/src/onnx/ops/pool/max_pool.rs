//! ONNX `MaxPool` (1-D or 2-D) to [`Op::MaxPool`]; `ceil_mode=1` as extra end padding, which max
//! pooling ignores; with `dilations`, as [`dilated`](super::dilated). The optional `Indices` output
//! is not supported.

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::pool::{dilated, emit_pool, window_of};
use crate::ConvertError;

/// Imports `MaxPool`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let order = ctx.attr_int("storage_order")?.unwrap_or(0);
    if order != 0 {
        return Err(ctx.err(format!(
            "attribute storage_order={order} is not supported (only row-major, 0)"
        )));
    }
    let w = window_of(ctx, &ctx.shape(x), false)?;
    ctx.extra_outputs_unavailable("the Indices output of MaxPool, which Ember does not compute");
    if w.dilations != [1, 1] {
        return dilated::emit(ctx, x, &w, dilated::Reduce::Max);
    }
    emit_pool(ctx, Op::MaxPool(w.pool), x, None)
}
