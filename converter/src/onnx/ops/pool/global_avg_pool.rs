//! ONNX `GlobalAveragePool` (rank-4 input) to [`Op::GlobalAvgPool`]; on rank-3 input (1-D,
//! `[N, C, L]`) to a Mean [`Op::Reduce`] over axis 2 with dims kept (`[N, C, 1]`).

use ember_core::ops::nn::reduce::ReduceOp;

use crate::ir::{Op, SpatialLayout};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `GlobalAveragePool`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let xs = ctx.shape(x);
    if xs.len() == 3 {
        let op = Op::Reduce {
            op: ReduceOp::Mean,
            axes: vec![2],
            keepdims: true,
        };
        ctx.emit(op, vec![x])?;
        return Ok(());
    }
    if xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only rank-3 (1-D) and rank-4 (2-D spatial) input is supported"
        )));
    }
    let layout = SpatialLayout::Nchw;
    ctx.emit(Op::GlobalAvgPool { layout }, vec![x])?;
    Ok(())
}
