//! ONNX `Reshape` with a constant target shape (an input since opset 5, an attribute before), with
//! the `0` (copy the input dim, unless `allowzero=1`) and `-1` (infer) rules.

use crate::ir::shape::numel;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Reshape`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let target = if ctx.opset >= 5 {
        let s = ctx.input(1, "shape")?;
        ctx.const_ints(s, "input shape")?
    } else {
        ctx.attr_ints("shape")?
            .ok_or_else(|| ctx.err("attribute shape is required"))?
    };
    let allowzero = ctx.attr_int("allowzero")?.unwrap_or(0) != 0;
    let shape = resolve_shape(&ctx.shape(x), &target, allowzero).map_err(|e| ctx.err(e))?;
    ctx.emit(Op::Reshape { shape }, vec![x])?;
    Ok(())
}

/// Applies ONNX's reshape rules to `target` for an input of dims `input`.
pub fn resolve_shape(
    input: &[usize],
    target: &[i64],
    allowzero: bool,
) -> Result<Vec<usize>, String> {
    let mut out = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, &t) in target.iter().enumerate() {
        match t {
            -1 if infer_at.is_some() => {
                return Err(format!("target shape {target:?} has more than one -1"))
            }
            -1 => {
                infer_at = Some(i);
                out.push(1);
            }
            0 if allowzero => out.push(0),
            0 => out.push(*input.get(i).ok_or_else(|| {
                format!("target shape {target:?} copies dim {i} (a 0), but the input {input:?} has rank {}", input.len())
            })?),
            t => out.push(usize::try_from(t).map_err(|_| {
                format!("target shape {target:?} has an invalid size {t}")
            })?),
        }
    }
    let total = numel(input)?;
    if let Some(i) = infer_at {
        let known = numel(&out)?;
        if known == 0 || total % known != 0 {
            return Err(format!(
                "cannot infer the -1 of {target:?} for an input of {input:?}"
            ));
        }
        out[i] = total / known;
    }
    if numel(&out)? != total {
        return Err(format!(
            "cannot reshape {input:?} to {target:?}: element counts differ"
        ));
    }
    Ok(out)
}
