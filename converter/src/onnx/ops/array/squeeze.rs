//! ONNX `Squeeze` and `Unsqueeze`: reshapes (free at run time, folded on constants). The axes are an
//! attribute before opset 13 and an optional constant input from 13; Squeeze without axes drops every
//! dim of size 1.

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// The `axes` of either op: the attribute before opset 13, the optional input 1 from 13.
fn axes(ctx: &NodeCtx<'_>) -> Result<Option<Vec<i64>>, ConvertError> {
    if ctx.opset >= 13 {
        match ctx.opt_input(1)? {
            Some(a) => ctx.const_ints(a, "input axes").map(Some),
            None => Ok(None),
        }
    } else {
        ctx.attr_ints("axes")
    }
}

/// Resolves `axes` against `rank`, rejecting repeats.
fn resolve(ctx: &NodeCtx<'_>, axes: &[i64], rank: usize) -> Result<Vec<usize>, ConvertError> {
    let mut out = axes
        .iter()
        .map(|&a| resolve_axis(a, rank))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ctx.err(format!("axes {axes:?}: {e}")))?;
    out.sort_unstable();
    if out.windows(2).any(|w| w[0] == w[1]) {
        return Err(ctx.err(format!("axes {axes:?} name an axis twice")));
    }
    Ok(out)
}

/// Imports `Squeeze`.
pub fn import_squeeze(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let dims = ctx.shape(x);
    let shape = match axes(ctx)? {
        Some(axes) => {
            let axes = resolve(ctx, &axes, dims.len())?;
            if let Some(&a) = axes.iter().find(|&&a| dims[a] != 1) {
                return Err(ctx.err(format!(
                    "cannot squeeze axis {a} of {dims:?}: its size is not 1"
                )));
            }
            (0..dims.len())
                .filter(|i| !axes.contains(i))
                .map(|i| dims[i])
                .collect()
        }
        None => dims.iter().copied().filter(|&d| d != 1).collect(),
    };
    ctx.emit(Op::Reshape { shape }, vec![x])?;
    Ok(())
}

/// Imports `Unsqueeze`.
pub fn import_unsqueeze(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let dims = ctx.shape(x);
    let axes = axes(ctx)?.ok_or_else(|| ctx.err("axes are required"))?;
    let rank = dims.len() + axes.len();
    let axes = resolve(ctx, &axes, rank)?;
    let mut rest = dims.iter();
    let shape = (0..rank)
        .map(|i| {
            if axes.contains(&i) {
                1
            } else {
                // `rank - axes.len()` positions are not in `axes`: exactly the input dims.
                rest.next().copied().unwrap_or(1)
            }
        })
        .collect();
    ctx.emit(Op::Reshape { shape }, vec![x])?;
    Ok(())
}
