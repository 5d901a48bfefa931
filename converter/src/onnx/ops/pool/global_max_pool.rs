//! ONNX `GlobalMaxPool` (rank-3 or rank-4 input) to a Max [`Op::Reduce`] over the spatial axes with
//! dims kept; the layout pass runs it on NHWC data when its input already is.

use ember_core::ops::nn::reduce::ReduceOp;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `GlobalMaxPool`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let xs = ctx.shape(x);
    if xs.len() != 3 && xs.len() != 4 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; only rank-3 (1-D) and rank-4 (2-D spatial) input is supported"
        )));
    }
    let op = Op::Reduce {
        op: ReduceOp::Max,
        axes: (2..xs.len()).collect(),
        keepdims: true,
    };
    ctx.emit(op, vec![x])?;
    Ok(())
}
