//! ONNX `Shape` (with `start`/`end` from opset 15) and `Size`: constants at conversion time, since
//! every shape is static.

use crate::ir::ConstData;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Shape`.
pub fn import_shape(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let dims = ctx.shape(x);
    let rank = dims.len() as i64;
    // ONNX clamps start and end into [0, rank] after adding the rank to negative values.
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(ctx.attr_int("start")?.unwrap_or(0));
    let end = clamp(ctx.attr_int("end")?.unwrap_or(rank));
    let values: Vec<i64> = dims[start..end.max(start)]
        .iter()
        .map(|&d| d as i64)
        .collect();
    bind_constant(ctx, vec![values.len()], ConstData::I64(values))
}

/// Imports `Size`.
pub fn import_size(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let n = crate::ir::shape::numel(&ctx.shape(x)).map_err(|e| ctx.err(e))?;
    bind_constant(ctx, vec![], ConstData::I64(vec![n as i64]))
}

/// Makes a constant, named after the node's output, the node's output (for the ops evaluated at
/// conversion time).
pub(crate) fn bind_constant(
    ctx: &mut NodeCtx<'_>,
    shape: Vec<usize>,
    data: ConstData,
) -> Result<(), ConvertError> {
    let dtype = data.dtype();
    bind_constant_of(ctx, shape, data, dtype)
}

/// [`bind_constant`] with the constant's dtype given (its data may be held wider).
pub(crate) fn bind_constant_of(
    ctx: &mut NodeCtx<'_>,
    shape: Vec<usize>,
    data: ConstData,
    dtype: crate::ir::DType,
) -> Result<(), ConvertError> {
    let name = ctx
        .node
        .output
        .first()
        .filter(|n| !n.is_empty())
        .cloned()
        .ok_or_else(|| ctx.err("the node has no output"))?;
    let id = ctx.imp.graph.add_constant_of(&name, shape, data, dtype);
    ctx.bind_output(id)
}
