//! ONNX `GatherElements`, `ScatterElements` (opsets 11, 13, 16, 18) and `GatherND`, `ScatterND`
//! (opsets 11, 12, 13, 16, 18) to the blob's [`OpKind::GatherScatterElements`] and
//! [`OpKind::GatherScatterNd`], carried as they are ([`Op::Core`]). The indices may be computed at run
//! time: the kernels check each one.

use ember_core::ops::array::gather_scatter::{GatherScatterMode, ScatterReduction};
use ember_core::schema::array::gather_scatter::{GatherScatterElementsParams, GatherScatterNdParams};
use ember_core::OpKind;

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// The `axis` attribute (default 0) resolved against the data's rank.
fn axis(ctx: &NodeCtx<'_>, rank: usize) -> Result<u8, ConvertError> {
    let a = ctx.attr_int("axis")?.unwrap_or(0);
    let a = resolve_axis(a, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    u8::try_from(a).map_err(|_| ctx.err(format!("axis {a} is too large")))
}

/// The `reduction` attribute of a scatter (opset 16 on; default `none`).
fn reduction(ctx: &NodeCtx<'_>) -> Result<ScatterReduction, ConvertError> {
    ctx.attr_choice(
        "reduction",
        "none",
        &[
            ("none", ScatterReduction::None),
            ("add", ScatterReduction::Add),
            ("mul", ScatterReduction::Mul),
            ("max", ScatterReduction::Max),
            ("min", ScatterReduction::Min),
        ],
    )
}

/// Imports `GatherElements`.
pub fn import_gather_elements(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let data = ctx.input(0, "data")?;
    let indices = ctx.input(1, "indices")?;
    let axis = axis(ctx, ctx.shape(data).len())?;
    let params = GatherScatterElementsParams {
        axis,
        mode: GatherScatterMode::Gather,
    };
    ctx.emit(Op::Core(OpKind::GatherScatterElements(params)), vec![data, indices])?;
    Ok(())
}

/// Imports `ScatterElements`.
pub fn import_scatter_elements(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let data = ctx.input(0, "data")?;
    let indices = ctx.input(1, "indices")?;
    let updates = ctx.input(2, "updates")?;
    let axis = axis(ctx, ctx.shape(data).len())?;
    let params = GatherScatterElementsParams {
        axis,
        mode: GatherScatterMode::Scatter(reduction(ctx)?),
    };
    let op = Op::Core(OpKind::GatherScatterElements(params));
    ctx.emit(op, vec![data, indices, updates])?;
    Ok(())
}

/// Imports `GatherND`.
pub fn import_gather_nd(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let data = ctx.input(0, "data")?;
    let indices = ctx.input(1, "indices")?;
    let b = ctx.attr_int("batch_dims")?.unwrap_or(0);
    let batch_dims = u8::try_from(b)
        .map_err(|_| ctx.err(format!("attribute batch_dims={b} is negative or too large")))?;
    let params = GatherScatterNdParams {
        batch_dims,
        mode: GatherScatterMode::Gather,
    };
    ctx.emit(Op::Core(OpKind::GatherScatterNd(params)), vec![data, indices])?;
    Ok(())
}

/// Imports `ScatterND`.
pub fn import_scatter_nd(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let data = ctx.input(0, "data")?;
    let indices = ctx.input(1, "indices")?;
    let updates = ctx.input(2, "updates")?;
    let params = GatherScatterNdParams {
        batch_dims: 0,
        mode: GatherScatterMode::Scatter(reduction(ctx)?),
    };
    let op = Op::Core(OpKind::GatherScatterNd(params));
    ctx.emit(op, vec![data, indices, updates])?;
    Ok(())
}
