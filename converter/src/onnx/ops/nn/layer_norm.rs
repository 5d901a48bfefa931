//! ONNX `LayerNormalization` (opset 17) to [`Op::LayerNorm`]: `axis` (default -1), `epsilon` (default
//! 1e-5), `Scale` and optional `B` broadcastable to `X.shape[axis..]`. Constant scale and bias are
//! expanded to that shape at conversion time; computed ones must have it already. Only the first output
//! `Y` is computed: a model that reads `Mean` or `InvStdDev` is rejected.

use crate::ir::shape::resolve_axis;
use crate::ir::{ConstData, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `LayerNormalization`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let scale = ctx.input(1, "Scale")?;
    let bias = ctx.opt_input(2)?;
    let xs = ctx.shape(x);
    let axis_attr = ctx.attr_int("axis")?.unwrap_or(-1);
    let axis =
        resolve_axis(axis_attr, xs.len()).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    let epsilon = ctx.attr_float("epsilon")?.unwrap_or(1e-5);
    ctx.extra_outputs_unavailable(
        "LayerNormalization's Mean or InvStdDev, which Ember does not compute (only Y is supported)",
    );
    let inner = xs[axis..].to_vec();
    let mut inputs = vec![x, expand_to(ctx, scale, &inner, "scale")?];
    if let Some(b) = bias {
        inputs.push(expand_to(ctx, b, &inner, "bias")?);
    }
    ctx.emit(Op::LayerNorm { axis, epsilon }, inputs)?;
    Ok(())
}

/// `t` broadcast (numpy rules, one way) to exactly `target`: itself if it has that shape, an expanded
/// copy if it is a constant, an error otherwise.
pub(crate) fn expand_to(
    ctx: &mut NodeCtx<'_>,
    t: TensorId,
    target: &[usize],
    what: &str,
) -> Result<TensorId, ConvertError> {
    let shape = ctx.shape(t);
    if shape == target {
        return Ok(t);
    }
    let fits = shape.len() <= target.len()
        && shape
            .iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(&s, &d)| s == d || s == 1);
    let Some(data) = ctx.const_f32(t).filter(|_| fits) else {
        return Err(ctx.err(format!(
            "{what} (\"{}\") has shape {shape:?}; it must be {target:?}, or a constant that \
             broadcasts to it",
            ctx.graph().tensor(t).name
        )));
    };
    let lead = target.len() - shape.len();
    let mut out = Vec::with_capacity(target.iter().product());
    let mut index = vec![0usize; target.len()];
    for _ in 0..target.iter().product::<usize>() {
        let src = shape.iter().enumerate().fold(0, |acc, (d, &s)| {
            acc * s + if s == 1 { 0 } else { index[lead + d] }
        });
        out.push(data[src]);
        for d in (0..target.len()).rev() {
            index[d] += 1;
            if index[d] < target[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(ctx.add_constant(what, target.to_vec(), ConstData::F32(out)))
}
