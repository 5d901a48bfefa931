//! ONNX `Pad`, constant mode only. Pads and the fill value are inputs since opset 11 (plus `axes`
//! since 18) and attributes before. Negative pads (cropping) are not supported.

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Pad`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let rank = ctx.shape(x).len();
    let mode = ctx
        .attr_string("mode")?
        .unwrap_or_else(|| "constant".into());
    if mode != "constant" {
        return Err(ctx.err(format!(
            "attribute mode={mode} is not supported; only constant padding is"
        )));
    }
    let (pads, value, axes) = if ctx.opset >= 11 {
        let p = ctx.input(1, "pads")?;
        let pads = ctx.const_ints(p, "input pads")?;
        let value = match ctx.opt_input(2)? {
            Some(v) => ctx.const_scalar(v, "constant_value")?,
            None => 0.0,
        };
        let axes = match ctx.opt_input(3)? {
            Some(a) => ctx
                .const_ints(a, "input axes")?
                .iter()
                .map(|&a| resolve_axis(a, rank))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ctx.err(format!("input axes: {e}")))?,
            None => (0..rank).collect(),
        };
        (pads, value, axes)
    } else {
        let pads = ctx
            .attr_ints("pads")?
            .ok_or_else(|| ctx.err("attribute pads is required"))?;
        (
            pads,
            ctx.attr_float("value")?.unwrap_or(0.0),
            (0..rank).collect(),
        )
    };
    if pads.len() != 2 * axes.len() {
        return Err(ctx.err(format!(
            "pads {pads:?} must have 2 x {} values (begin for each axis, then end)",
            axes.len()
        )));
    }
    let (mut before, mut after) = (vec![0; rank], vec![0; rank]);
    for (i, &axis) in axes.iter().enumerate() {
        let size = |v: i64| {
            usize::try_from(v).map_err(|_| {
                ctx.err(format!(
                    "pads {pads:?} contain a negative value; cropping with Pad is not supported"
                ))
            })
        };
        before[axis] = size(pads[i])?;
        after[axis] = size(pads[i + axes.len()])?;
    }
    ctx.emit(
        Op::Pad {
            before,
            after,
            value,
        },
        vec![x],
    )?;
    Ok(())
}
