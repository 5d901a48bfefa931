//! ONNX `Transpose` (default permutation: reverse the dims).

use crate::ir::shape::is_permutation;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Transpose`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let rank = ctx.shape(x).len();
    let perm = match ctx.attr_sizes("perm", 0)? {
        Some(p) => p,
        None => (0..rank).rev().collect(),
    };
    if perm.len() != rank || !is_permutation(&perm) {
        return Err(ctx.err(format!(
            "attribute perm={perm:?} is not a permutation of the {rank} axes"
        )));
    }
    ctx.emit(Op::Transpose { perm }, vec![x])?;
    Ok(())
}
