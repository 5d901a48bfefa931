//! ONNX `Slice`: `starts`, `ends` and the optional `axes` and `steps` are constant inputs from opset 10
//! and attributes before (no steps). Starts and ends are resolved and clamped as ONNX says (negative
//! values count from the end; a negative step walks backwards); the result is a strided slice with
//! every index resolved. A slice of a constant is evaluated at conversion time.

use crate::ir::shape::resolve_axis;
use crate::ir::op::Slice;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Slice`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let dims = ctx.shape(x);
    let (starts, ends, axes, steps) = if ctx.opset >= 10 {
        let ints = |i: usize, what: &str| -> Result<Option<Vec<i64>>, ConvertError> {
            match ctx.opt_input(i)? {
                Some(t) => ctx.const_ints(t, what).map(Some),
                None => Ok(None),
            }
        };
        let starts = ints(1, "input starts")?.ok_or_else(|| ctx.err("input starts is required"))?;
        let ends = ints(2, "input ends")?.ok_or_else(|| ctx.err("input ends is required"))?;
        (
            starts,
            ends,
            ints(3, "input axes")?,
            ints(4, "input steps")?,
        )
    } else {
        let attr = |name: &str| {
            ctx.attr_ints(name)?
                .ok_or_else(|| ctx.err(format!("attribute {name} is required")))
        };
        (attr("starts")?, attr("ends")?, ctx.attr_ints("axes")?, None)
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(ctx.err(format!(
            "starts {starts:?}, ends {ends:?}, axes {axes:?} and steps {steps:?} differ in length"
        )));
    }
    let slice = resolve(&dims, &starts, &ends, &axes, &steps).map_err(|e| ctx.err(e))?;
    let whole = slice.size == dims && slice.start.iter().all(|&s| s == 0);
    let op = if whole && slice.step.iter().all(|&s| s == 1) {
        // Everything, in order: free.
        Op::Reshape { shape: dims }
    } else {
        Op::Slice(slice)
    };
    ctx.emit(op, vec![x])?;
    Ok(())
}

/// ONNX's slice rules, resolved to a start, step and count per axis of `dims`.
pub fn resolve(
    dims: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: &[i64],
    steps: &[i64],
) -> Result<Slice, String> {
    let rank = dims.len();
    let mut s = Slice {
        start: vec![0; rank],
        step: vec![1; rank],
        size: dims.to_vec(),
    };
    let mut seen = vec![false; rank];
    for i in 0..starts.len() {
        let a = resolve_axis(axes[i], rank).map_err(|e| format!("axes: {e}"))?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(format!("axes {axes:?} name axis {a} twice"));
        }
        let step = steps[i];
        if step == 0 {
            return Err(format!("steps {steps:?} contain 0"));
        }
        let dim = dims[a] as i128;
        let from_end = |v: i64| {
            let v = i128::from(v);
            if v < 0 {
                v + dim
            } else {
                v
            }
        };
        let (start, end) = if step > 0 {
            (
                from_end(starts[i]).clamp(0, dim),
                from_end(ends[i]).clamp(0, dim),
            )
        } else {
            (
                from_end(starts[i]).clamp(0, dim - 1),
                from_end(ends[i]).clamp(-1, dim - 1),
            )
        };
        let step_w = i128::from(step);
        let count = if step > 0 {
            (end - start + step_w - 1).div_euclid(step_w).max(0)
        } else {
            (start - end - step_w - 1).div_euclid(-step_w).max(0)
        };
        s.size[a] = count as usize;
        s.step[a] = step;
        s.start[a] = if count == 0 { 0 } else { start as usize };
    }
    Ok(s)
}
