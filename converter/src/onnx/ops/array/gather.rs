//! ONNX `Gather`. With constant indices: negative indices are resolved here, and the indices become an
//! f32 weight tensor of whole numbers, the second input of the runtime `Gather` (a gather of a
//! constant, e.g. one dim of a `Shape`, folds into a constant as it is added: `ir::emit::add_node`). With indices computed at
//! run time (int32 or int64) on axis 0 of a FLOAT initializer, a transformer's token embedding, it
//! is the runtime `Embedding` lookup, which checks each index as it runs.

use crate::ir::shape::resolve_axis;
use crate::ir::{ConstData, DType, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Largest axis length whose indices f32 holds exactly.
const MAX_EXACT: usize = 1 << 24;

/// Imports `Gather`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let idx = ctx.input(1, "indices")?;
    let dims = ctx.shape(x);
    let axis = resolve_axis(ctx.attr_int("axis")?.unwrap_or(0), dims.len())
        .map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    let (xt, it) = (ctx.graph().tensor(x), ctx.graph().tensor(idx));
    let lookup = axis == 0
        && it.data.is_none()
        && matches!(it.dtype, DType::I32 | DType::I64)
        && xt.data.is_some()
        && xt.dtype == DType::F32;
    if lookup {
        ctx.emit(Op::Embedding, vec![x, idx])?;
        return Ok(());
    }
    let raw = ctx.const_ints(idx, "input indices")?;
    let idx_shape = ctx.shape(idx);
    let len = dims[axis];
    let indices = raw
        .iter()
        .map(|&i| {
            let r = if i < 0 { i + len as i64 } else { i };
            usize::try_from(r)
                .ok()
                .filter(|&r| r < len)
                .ok_or_else(|| ctx.err(format!("index {i} is outside axis {axis} of {dims:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if len > MAX_EXACT {
        return Err(ctx.err(format!(
            "axis {axis} of {dims:?} is longer than 2^24; Ember stores gather indices as f32"
        )));
    }
    let values = indices.iter().map(|&i| i as f32).collect();
    let c = ctx.add_constant("indices", idx_shape, ConstData::F32(values));
    ctx.emit(Op::Gather { axis }, vec![x, c])?;
    Ok(())
}
