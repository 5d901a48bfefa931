//! ONNX `NonZero` (opsets 9, 13) to the blob's [`OpKind::NonZero`], carried as it is
//! ([`Op::Core`]). Its count depends on the data: the output is `[rank, N]` for the `--max-count`
//! `N` of its output ([`NodeCtx::max_count`]), -1 past the count.

use ember_core::schema::array::non_zero::NonZeroParams;
use ember_core::OpKind;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `NonZero`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let max = ctx.max_count()?;
    ctx.emit(Op::Core(OpKind::NonZero(NonZeroParams { max })), vec![x])?;
    Ok(())
}
