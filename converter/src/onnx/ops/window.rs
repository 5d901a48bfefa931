//! Sliding-window attributes shared by Conv, MaxPool and AveragePool: `strides`, `dilations`,
//! `pads` and `auto_pad` (NOTSET, VALID, SAME_UPPER, SAME_LOWER), resolved to explicit numbers.

use crate::ir::shape::window_out;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// A resolved 2-D window.
pub struct Window {
    /// `[h, w]`.
    pub strides: [usize; 2],
    /// `[h, w]`.
    pub dilations: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [usize; 4],
}

/// Reads an attribute holding one value per spatial axis (2), or `default` when absent.
pub fn pair(
    ctx: &NodeCtx<'_>,
    name: &str,
    min: i64,
    default: usize,
) -> Result<[usize; 2], ConvertError> {
    match ctx.attr_sizes(name, min)? {
        None => Ok([default; 2]),
        Some(v) => <[usize; 2]>::try_from(v.as_slice()).map_err(|_| {
            ctx.err(format!(
                "attribute {name}={v:?} must have 2 values (only 2-D windows are supported)"
            ))
        }),
    }
}

/// Resolves strides, dilations and padding of a window of size `kernel` over spatial dims `hw`.
pub fn resolve(
    ctx: &NodeCtx<'_>,
    hw: [usize; 2],
    kernel: [usize; 2],
) -> Result<Window, ConvertError> {
    let strides = pair(ctx, "strides", 1, 1)?;
    let dilations = pair(ctx, "dilations", 1, 1)?;
    let auto_pad = ctx.attr_string("auto_pad")?.unwrap_or_default();
    let explicit: Option<[usize; 4]> = explicit_pads(ctx, "[top, left, bottom, right]")?;
    let pads = match auto_pad.as_str() {
        "" | "NOTSET" => explicit.unwrap_or([0; 4]),
        "VALID" | "SAME_UPPER" | "SAME_LOWER" if explicit.is_some_and(|p| p != [0; 4]) => {
            return Err(ctx.err(format!(
                "attribute auto_pad={auto_pad} cannot be combined with explicit pads"
            )))
        }
        "VALID" => [0; 4],
        "SAME_UPPER" | "SAME_LOWER" => {
            let upper = auto_pad == "SAME_UPPER";
            let mut p = [0; 4];
            for axis in 0..2 {
                let (begin, end) = same_pads(
                    hw[axis],
                    kernel[axis],
                    strides[axis],
                    dilations[axis],
                    upper,
                )
                .map_err(|e| ctx.err(e))?;
                p[axis] = begin;
                p[axis + 2] = end;
            }
            p
        }
        other => {
            return Err(ctx.err(format!(
                "attribute auto_pad={other} is not valid; expected NOTSET, VALID, SAME_UPPER or \
                 SAME_LOWER"
            )))
        }
    };
    Ok(Window {
        strides,
        dilations,
        pads,
    })
}

/// The attribute `pads`, if given, as its `N` values (`order` names them in the error).
fn explicit_pads<const N: usize>(
    ctx: &NodeCtx<'_>,
    order: &str,
) -> Result<Option<[usize; N]>, ConvertError> {
    let Some(p) = ctx.attr_sizes("pads", 0)? else {
        return Ok(None);
    };
    let pads = <[usize; N]>::try_from(p.as_slice())
        .map_err(|_| ctx.err(format!("attribute pads={p:?} must have {N} values {order}")))?;
    Ok(Some(pads))
}

/// Resolves a 1-D window (attributes with one value each; `pads` = `[begin, end]`) of size `kernel`
/// over length `len`, as the 2-D window of the same data viewed as `[N, C, 1, L]`: the H axis gets
/// stride 1, dilation 1 and no padding.
pub fn resolve_1d(ctx: &NodeCtx<'_>, len: usize, kernel: usize) -> Result<Window, ConvertError> {
    let one = |name: &str, min: i64| -> Result<usize, ConvertError> {
        match ctx.attr_sizes(name, min)? {
            None => Ok(1),
            Some(v) if v.len() == 1 => Ok(v[0]),
            Some(v) => Err(ctx.err(format!(
                "attribute {name}={v:?} must have 1 value (the input is 1-D: [N, C, L])"
            ))),
        }
    };
    let stride = one("strides", 1)?;
    let dilation = one("dilations", 1)?;
    let auto_pad = ctx.attr_string("auto_pad")?.unwrap_or_default();
    let explicit: Option<[usize; 2]> =
        explicit_pads(ctx, "[begin, end] (the input is 1-D: [N, C, L])")?;
    let (begin, end) = match auto_pad.as_str() {
        "" | "NOTSET" => explicit.map_or((0, 0), |[b, e]| (b, e)),
        "VALID" | "SAME_UPPER" | "SAME_LOWER" if explicit.is_some_and(|p| p != [0; 2]) => {
            return Err(ctx.err(format!(
                "attribute auto_pad={auto_pad} cannot be combined with explicit pads"
            )))
        }
        "VALID" => (0, 0),
        "SAME_UPPER" | "SAME_LOWER" => {
            same_pads(len, kernel, stride, dilation, auto_pad == "SAME_UPPER")
                .map_err(|e| ctx.err(e))?
        }
        other => {
            return Err(ctx.err(format!(
                "attribute auto_pad={other} is not valid; expected NOTSET, VALID, SAME_UPPER or \
                 SAME_LOWER"
            )))
        }
    };
    Ok(Window {
        strides: [1, stride],
        dilations: [1, dilation],
        pads: [0, begin, 0, end],
    })
}

/// `(begin, end)` padding so that the output size is `ceil(size / stride)`; the odd cell goes at the
/// end for SAME_UPPER and at the beginning for SAME_LOWER.
fn same_pads(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    upper: bool,
) -> Result<(usize, usize), String> {
    let out = size.div_ceil(stride.max(1));
    let span = dilation
        .checked_mul(kernel.saturating_sub(1))
        .and_then(|s| s.checked_add(1))
        .ok_or("kernel span overflows")?;
    let need = out
        .saturating_sub(1)
        .checked_mul(stride)
        .and_then(|s| s.checked_add(span))
        .ok_or("padding overflows")?;
    let total = need.saturating_sub(size);
    let small = total / 2;
    Ok(if upper {
        (small, total - small)
    } else {
        (total - small, small)
    })
}

/// For pooling with `ceil_mode=1`: checks that rounding up gives the same output size as rounding
/// down (Ember's pooling rounds down), and explains the problem otherwise.
pub fn check_ceil_mode(
    ctx: &NodeCtx<'_>,
    hw: [usize; 2],
    kernel: [usize; 2],
    w: &Window,
) -> Result<(), ConvertError> {
    for axis in 0..2 {
        let (begin, end) = (w.pads[axis], w.pads[axis + 2]);
        let floor = window_out(hw[axis], kernel[axis], w.strides[axis], 1, begin, end)
            .map_err(|e| ctx.err(e))?;
        let padded = hw[axis] + begin + end;
        let mut ceil = (padded - kernel[axis]).div_ceil(w.strides[axis]) + 1;
        // A last window that would start in the end padding is dropped (ONNX and onnxruntime).
        if (ceil - 1) * w.strides[axis] >= hw[axis] + begin {
            ceil -= 1;
        }
        if ceil != floor {
            return Err(ctx.err(format!(
                "attribute ceil_mode=1 gives output size {ceil} on spatial axis {axis} where rounding \
                 down gives {floor}; Ember's pooling rounds down, so only ceil_mode=1 models where both \
                 agree are supported. Re-export with ceil_mode=0 (with extra end padding if the last \
                 window is needed)"
            )));
        }
    }
    Ok(())
}
