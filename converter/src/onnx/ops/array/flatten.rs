//! ONNX `Flatten`: `[prod(dims[..axis]), prod(dims[axis..])]`, a Reshape.

use crate::ir::shape::numel;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Flatten`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let dims = ctx.shape(x);
    let rank = i64::try_from(dims.len()).map_err(|_| ctx.err("rank too large"))?;
    let axis = ctx.attr_int("axis")?.unwrap_or(1);
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..=rank).contains(&a) {
        return Err(ctx.err(format!(
            "attribute axis={axis} is out of range for rank {rank}"
        )));
    }
    // 0 <= a <= rank, checked above.
    let a = a as usize;
    let rows = numel(&dims[..a]).map_err(|e| ctx.err(e))?;
    let cols = numel(&dims[a..]).map_err(|e| ctx.err(e))?;
    ctx.emit(
        Op::Reshape {
            shape: vec![rows, cols],
        },
        vec![x],
    )?;
    Ok(())
}
