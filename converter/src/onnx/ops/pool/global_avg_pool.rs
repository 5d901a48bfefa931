//! ONNX `GlobalAveragePool` (rank-4 input) to [`Op::GlobalAvgPool`].

use crate::ir::{Op, SpatialLayout};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `GlobalAveragePool`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let xs = ctx.shape(x);
    if xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only rank-4 (2-D spatial) input is supported"
        )));
    }
    let layout = SpatialLayout::Nchw;
    ctx.emit(Op::GlobalAvgPool { layout }, vec![x])?;
    Ok(())
}
