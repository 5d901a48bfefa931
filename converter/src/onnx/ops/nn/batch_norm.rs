//! ONNX `BatchNormalization` in inference mode to [`Op::BatchNorm`]: `X [N, C, ...]` and constant
//! `scale`, `B`, `input_mean`, `input_var` (each `[C]`), `epsilon` (default 1e-5); `momentum` does not
//! matter at inference. The `fold_batch_norm` pass folds it into the Conv or FullyConnected before it,
//! or rewrites it as a per-channel Mul and Add. Training mode, `spatial=0` and the training outputs
//! (running mean and variance) are rejected.

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `BatchNormalization`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let xs = ctx.shape(x);
    if xs.len() < 2 {
        return Err(ctx.err(format!(
            "input X has shape {xs:?}; BatchNormalization needs [N, C, ...] (rank >= 2)"
        )));
    }
    if ctx.attr_int("training_mode")?.unwrap_or(0) != 0 {
        return Err(ctx.err("training_mode=1 is not supported; export for inference"));
    }
    if ctx.attr_int("spatial")?.unwrap_or(1) == 0 {
        return Err(ctx.err("spatial=0 (statistics per element, not per channel) is not supported"));
    }
    if ctx.attr_int("is_test")? == Some(0) {
        return Err(ctx.err("is_test=0 (training) is not supported; export for inference"));
    }
    let mut inputs = vec![x];
    for (i, what) in [(1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var")] {
        let t = ctx.input(i, what)?;
        if ctx.const_f32(t).is_none() || ctx.shape(t) != [xs[1]] {
            return Err(ctx.err(format!(
                "{what} (\"{}\") must be a FLOAT constant of shape [{}]",
                ctx.graph().tensor(t).name,
                xs[1]
            )));
        }
        inputs.push(t);
    }
    let epsilon = ctx.attr_float("epsilon")?.unwrap_or(1e-5);
    ctx.extra_outputs_unavailable(
        "a training output of BatchNormalization, which Ember does not compute",
    );
    ctx.emit(Op::BatchNorm { epsilon }, inputs)?;
    Ok(())
}
