//! ONNX `Pad`. Pads and the fill value are inputs since opset 11 (plus `axes` since 18) and attributes
//! before. Negative pads crop: a `Slice` first, then the padding of the rest.
//!
//! `constant` mode is the runtime `Pad`. `reflect`, `edge` and `wrap` read every output element from an
//! element of the input, so each padded axis becomes one `Gather` with constant indices (the mapping from
//! output to input position along that axis): every target and the int8 path run them with no kernel of
//! their own, and a model pads a few axes, so the copies stay few.

use crate::ir::shape::resolve_axis;
use crate::ir::op::Slice;
use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Largest padded axis whose indices f32 holds exactly (the runtime `Gather` stores them as f32).
const MAX_EXACT: usize = 1 << 24;

/// How a non-constant mode fills the padding.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Mirrored about the first and last element, which is not repeated (`[a b c]` -> `c b | a b c | b a`).
    Reflect,
    /// The first and last element repeated.
    Edge,
    /// The axis repeated periodically (`[a b c]` -> `b c | a b c | a b`).
    Wrap,
}

/// Imports `Pad`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "data")?;
    let dims = ctx.shape(x);
    let rank = dims.len();
    let mode = ctx
        .attr_string("mode")?
        .unwrap_or_else(|| "constant".into());
    let mode = match mode.as_str() {
        "constant" => None,
        "reflect" => Some(Mode::Reflect),
        "edge" => Some(Mode::Edge),
        "wrap" if ctx.opset >= 19 => Some(Mode::Wrap),
        _ => {
            return Err(ctx.err(format!(
                "attribute mode={mode} is not supported; the modes are constant, reflect, edge \
                 and (from opset 19) wrap"
            )))
        }
    };
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
    // Negative pads crop: the input is cut first and the rest padded onto what is left, as
    // onnxruntime does (a wrap or reflect then reads the cropped axis).
    let (mut before, mut after) = (vec![0; rank], vec![0; rank]);
    let mut crop = Slice {
        start: vec![0; rank],
        step: vec![1; rank],
        size: dims.clone(),
    };
    for (i, &axis) in axes.iter().enumerate() {
        let (b, a) = (pads[i], pads[i + axes.len()]);
        let cut = |v: i64| usize::try_from(v.min(0).unsigned_abs()).unwrap_or(usize::MAX);
        let (cut_b, cut_a) = (cut(b), cut(a));
        if cut_b.saturating_add(cut_a) > dims[axis] {
            return Err(ctx.err(format!(
                "pads {pads:?} crop {} elements off axis {axis}, which has {}",
                cut_b.saturating_add(cut_a),
                dims[axis]
            )));
        }
        crop.start[axis] = cut_b;
        crop.size[axis] = dims[axis] - cut_b - cut_a;
        before[axis] = usize::try_from(b.max(0)).unwrap_or(usize::MAX);
        after[axis] = usize::try_from(a.max(0)).unwrap_or(usize::MAX);
    }
    let (x, dims) = if crop.size != dims {
        let cropped = crop.size.clone();
        if before.iter().chain(&after).all(|&p| p == 0) {
            // Only cropping: the Slice is the node.
            ctx.emit(Op::Slice(crop), vec![x])?;
            return Ok(());
        }
        (ctx.emit_tmp("crop", Op::Slice(crop), vec![x])?, cropped)
    } else {
        (x, dims)
    };
    let Some(mode) = mode else {
        ctx.emit(
            Op::Pad {
                before,
                after,
                value,
            },
            vec![x],
        )?;
        return Ok(());
    };
    let padded: Vec<usize> = (0..rank)
        .filter(|&a| before[a] + after[a] > 0)
        .collect();
    if padded.is_empty() {
        // Nothing to pad: a Reshape to the same shape keeps the output a distinct tensor, and the
        // identity pass removes it.
        if ctx.graph().is_const(x) {
            return ctx.bind_output(x);
        }
        ctx.emit(Op::Reshape { shape: dims }, vec![x])?;
        return Ok(());
    }
    let mut cur = x;
    for (k, &axis) in padded.iter().enumerate() {
        let indices = source_indices(mode, dims[axis], before[axis], after[axis])
            .map_err(|why| ctx.err(format!("axis {axis} of {dims:?}: {why}")))?;
        let n = indices.len();
        let c = ctx.add_constant(
            &format!("pad_indices{axis}"),
            vec![n],
            ConstData::F32(indices.into_iter().map(|i| i as f32).collect()),
        );
        cur = if k + 1 == padded.len() {
            ctx.emit(Op::Gather { axis }, vec![cur, c])?
        } else {
            ctx.emit_tmp(&format!("pad{axis}"), Op::Gather { axis }, vec![cur, c])?
        };
    }
    Ok(())
}

/// For each position of the padded axis (`before + len + after` of them), the input position it copies.
fn source_indices(
    mode: Mode,
    len: usize,
    before: usize,
    after: usize,
) -> Result<Vec<usize>, String> {
    let out = len
        .checked_add(before)
        .and_then(|n| n.checked_add(after))
        .filter(|&n| n <= MAX_EXACT)
        .ok_or_else(|| format!("padding to {len} + {before} + {after} elements is more than 2^24"))?;
    if len == 0 {
        return Err("the axis is empty, so there is nothing to copy into the padding".into());
    }
    if mode == Mode::Reflect && len == 1 && before + after > 0 {
        return Err("reflect padding needs at least 2 elements to mirror; use edge".into());
    }
    let (n, b) = (len as i64, before as i64);
    Ok((0..out as i64)
        .map(|o| {
            let i = o - b;
            let src = match mode {
                Mode::Edge => i.clamp(0, n - 1),
                Mode::Wrap => i.rem_euclid(n),
                Mode::Reflect => {
                    // Mirroring is periodic with period 2 (n - 1): fold into one period, then reflect
                    // its second half (numpy's `reflect`, which repeats for pads longer than the axis).
                    let p = 2 * (n - 1);
                    let r = i.rem_euclid(p);
                    if r < n {
                        r
                    } else {
                        p - r
                    }
                }
            };
            src as usize
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_numpy_pad_modes() {
        // np.pad(np.arange(4), (3, 2), mode=...) gives these positions.
        assert_eq!(
            source_indices(Mode::Reflect, 4, 3, 2).unwrap(),
            [3, 2, 1, 0, 1, 2, 3, 2, 1]
        );
        assert_eq!(
            source_indices(Mode::Edge, 4, 3, 2).unwrap(),
            [0, 0, 0, 0, 1, 2, 3, 3, 3]
        );
        assert_eq!(
            source_indices(Mode::Wrap, 4, 3, 2).unwrap(),
            [1, 2, 3, 0, 1, 2, 3, 0, 1]
        );
        // Longer than the axis: np.pad(np.arange(3), (5, 4), mode="reflect").
        assert_eq!(
            source_indices(Mode::Reflect, 3, 5, 4).unwrap(),
            [1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2]
        );
    }

    #[test]
    fn impossible_paddings_are_errors() {
        assert!(source_indices(Mode::Reflect, 1, 1, 0)
            .unwrap_err()
            .contains("edge"));
        assert!(source_indices(Mode::Edge, 0, 1, 1).is_err());
        assert!(source_indices(Mode::Wrap, 4, usize::MAX, 1).is_err());
    }
}
