//! Element-wise math: binary ops with broadcasting (Add, Sub, Mul, Div, Pow, PRelu, Mod), the variadic
//! ones (Min, Max, Sum, Mean), unary ops (activations, rounding, elementary functions), Clip,
//! comparisons and boolean logic.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/onnx/ops/math");

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Emits `op` over the node's two inputs `A` and `B` (a comparison or a logical op).
fn emit_a_b(ctx: &mut NodeCtx<'_>, op: Op) -> Result<(), ConvertError> {
    let a = ctx.input(0, "A")?;
    let b = ctx.input(1, "B")?;
    ctx.emit(op, vec![a, b])?;
    Ok(())
}
