//! ONNX `Trilu` (opset 14) to the blob's [`OpKind::Trilu`], carried as it is ([`Op::Core`]): `upper`
//! (default 1) and the diagonal `k`, an optional constant input (default 0). Any dtype.

use ember_core::ops::array::trilu::TriluParams;
use ember_core::OpKind;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Trilu`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let k = match ctx.opt_input(1)? {
        Some(k) => match ctx.const_ints(k, "input k")?.as_slice() {
            [k] => *k,
            other => return Err(ctx.err(format!("input k must hold one value, it holds {}", other.len()))),
        },
        None => 0,
    };
    let upper = match ctx.attr_int("upper")?.unwrap_or(1) {
        0 => false,
        1 => true,
        v => return Err(ctx.err(format!("attribute upper={v} must be 0 or 1"))),
    };
    ctx.emit(Op::Core(OpKind::Trilu(TriluParams { upper, k })), vec![x])?;
    Ok(())
}
