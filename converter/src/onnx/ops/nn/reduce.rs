//! ONNX `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceProd`, `ReduceL1`, `ReduceL2`,
//! `ReduceLogSum`, `ReduceLogSumExp` and `ReduceSumSquare` to [`Op::Reduce`].
//!
//! The axes come from the `axes` attribute up to opset 12 (ReduceSum) or 17 (the others), and from an
//! optional constant INT64 input `axes` after that, where `noop_with_empty_axes=1` with no axes makes
//! the node an identity (otherwise no axes means every axis). Negative axes count from the end;
//! repeated axes are an error. `keepdims` (default 1) keeps reduced axes as dims of 1.

use ember_core::ops::nn::reduce::ReduceOp;

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports one of the `Reduce*` ops.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op = match ctx.node.op_type.as_str() {
        "ReduceSum" => ReduceOp::Sum,
        "ReduceMean" => ReduceOp::Mean,
        "ReduceMax" => ReduceOp::Max,
        "ReduceMin" => ReduceOp::Min,
        "ReduceProd" => ReduceOp::Prod,
        "ReduceL1" => ReduceOp::L1,
        "ReduceL2" => ReduceOp::L2,
        "ReduceLogSumExp" => ReduceOp::LogSumExp,
        "ReduceSumSquare" => ReduceOp::SumSquare,
        "ReduceLogSum" => ReduceOp::LogSum,
        other => return Err(ctx.err(format!("{other} is not a reduction"))),
    };
    let x = ctx.input(0, "data")?;
    let rank = ctx.shape(x).len();
    let axes_from_input = match op {
        ReduceOp::Sum => ctx.opset >= 13,
        _ => ctx.opset >= 18,
    };
    // Each form's other attribute is not part of its opsets, so it is left unread (and rejected).
    let (axes, noop) = if axes_from_input {
        let axes = match ctx.opt_input(1)? {
            Some(t) => Some(ctx.const_ints(t, "input axes")?),
            None => None,
        };
        (
            axes,
            ctx.attr_int("noop_with_empty_axes")?.unwrap_or(0) != 0,
        )
    } else {
        (ctx.attr_ints("axes")?, false)
    };
    let axes = axes.unwrap_or_default();
    let keepdims = ctx.attr_int("keepdims")?.unwrap_or(1) != 0;
    if axes.is_empty() && noop {
        let shape = ctx.shape(x);
        ctx.emit(Op::Reshape { shape }, vec![x])?;
        return Ok(());
    }
    let mut resolved = if axes.is_empty() {
        (0..rank).collect::<Vec<_>>()
    } else {
        axes.iter()
            .map(|&a| resolve_axis(a, rank))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ctx.err(format!("axes {axes:?}: {e}")))?
    };
    resolved.sort_unstable();
    if resolved.windows(2).any(|w| w[0] == w[1]) {
        return Err(ctx.err(format!("axes {axes:?} name the same axis twice")));
    }
    ctx.emit(
        Op::Reduce {
            op,
            axes: resolved,
            keepdims,
        },
        vec![x],
    )?;
    Ok(())
}
