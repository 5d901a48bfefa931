//! ONNX `CumSum` (opset 11; 14 adds types) to the blob's [`OpKind::CumSum`], carried as it is
//! ([`Op::Core`]): the `axis` input must be a constant (one value, negative from the end);
//! `exclusive` and `reverse` default to 0.

use ember_core::ops::math::cumsum::CumSumParams;
use ember_core::OpKind;

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `CumSum`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "x")?;
    let axis_input = ctx.input(1, "axis")?;
    let rank = ctx.shape(x).len();
    let axis = match ctx.const_ints(axis_input, "input axis")?.as_slice() {
        [a] => resolve_axis(*a, rank).map_err(|e| ctx.err(format!("input axis: {e}")))?,
        other => return Err(ctx.err(format!("input axis must hold one value, it holds {}", other.len()))),
    };
    let flag = |ctx: &mut NodeCtx<'_>, name: &str| -> Result<bool, ConvertError> {
        match ctx.attr_int(name)?.unwrap_or(0) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ctx.err(format!("attribute {name}={v} must be 0 or 1"))),
        }
    };
    let exclusive = flag(ctx, "exclusive")?;
    let reverse = flag(ctx, "reverse")?;
    let axis = u8::try_from(axis).map_err(|_| ctx.err(format!("axis {axis} is too large")))?;
    let params = CumSumParams {
        axis,
        exclusive,
        reverse,
    };
    ctx.emit(Op::Core(OpKind::CumSum(params)), vec![x])?;
    Ok(())
}
