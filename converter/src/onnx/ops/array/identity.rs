//! ONNX `Identity` and `Dropout` (inference: identity). Imported as a same-shape Reshape, which the
//! `identity` pass removes; Dropout's mask output cannot be used.

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Identity` or `Dropout`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    if ctx.node.op_type == "Dropout" && ctx.opset >= 12 {
        if let Some(t) = ctx.opt_input(2)? {
            let training = ctx.const_ints(t, "training_mode")?;
            if training.iter().any(|&v| v != 0) {
                return Err(ctx.err("training_mode=true is not supported; export for inference"));
            }
        }
    }
    ctx.extra_outputs_unavailable("the Dropout mask, which Ember does not compute");
    if ctx.graph().is_const(x) {
        return ctx.bind_output(x);
    }
    let shape = ctx.shape(x);
    ctx.emit(Op::Reshape { shape }, vec![x])?;
    Ok(())
}
