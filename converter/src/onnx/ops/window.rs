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

/// For pooling with `ceil_mode=1`: the padding to add at the end of each spatial axis (`[h, w]`)
/// so that Ember's pooling, which rounds the output size down, gives the size that rounding up gives.
/// The extra cells are padding like the explicit ones: max pooling ignores them and average pooling
/// without `count_include_pad` leaves them out of the divisor.
pub fn ceil_mode_pads(
    ctx: &NodeCtx<'_>,
    hw: [usize; 2],
    kernel: [usize; 2],
    w: &Window,
) -> Result<[usize; 2], ConvertError> {
    let mut extra = [0; 2];
    for axis in 0..2 {
        let (begin, end) = (w.pads[axis], w.pads[axis + 2]);
        extra[axis] = ceil_extra_end(
            hw[axis],
            kernel[axis],
            w.strides[axis],
            w.dilations[axis],
            begin,
            end,
        )
        .map_err(|e| ctx.err(format!("spatial axis {axis}: {e}")))?;
    }
    Ok(extra)
}

/// The output length of a pooling window with `ceil_mode=1` along one axis, as ONNX and onnxruntime
/// define it: `ceil((size + begin + end - span) / stride) + 1`, less one when the last window would
/// start in the end padding (at or past `size + begin`), where `span = dilation * (kernel - 1) + 1`.
pub fn ceil_out(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    begin: usize,
    end: usize,
) -> Result<usize, String> {
    // Checks the numbers (non-zero, no overflow, the window fits) as the floor rule does.
    window_out(size, kernel, stride, dilation, begin, end)?;
    let span = dilation * (kernel - 1) + 1;
    let mut out = (size + begin + end - span).div_ceil(stride) + 1;
    if (out - 1) * stride >= size + begin {
        out -= 1;
    }
    Ok(out)
}

/// The end padding to add along one axis so that the floor rule gives [`ceil_out`]: the last
/// window's end past the padded input, at most `span - 1` (the last window starts inside the input
/// or its begin padding).
pub fn ceil_extra_end(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    begin: usize,
    end: usize,
) -> Result<usize, String> {
    let out = ceil_out(size, kernel, stride, dilation, begin, end)?;
    let floor = window_out(size, kernel, stride, dilation, begin, end)?;
    if out < floor {
        return Err(format!(
            "with ceil_mode=1 the output size is {out}, less than the {floor} of rounding down: the \
             end padding ({end}) holds a whole window; use smaller end padding"
        ));
    }
    let span = dilation * (kernel - 1) + 1;
    Ok(((out - 1) * stride + span).saturating_sub(size + begin + end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_rounds_up_where_the_last_window_starts_inside() {
        // size 4, kernel 3, stride 2: floor (4 - 3) / 2 + 1 = 1, ceil 2; the second window starts at
        // 2 (inside) and ends at 5: one extra cell.
        assert_eq!(ceil_out(4, 3, 2, 1, 0, 0), Ok(2));
        assert_eq!(ceil_extra_end(4, 3, 2, 1, 0, 0), Ok(1));
        assert_eq!(window_out(4, 3, 2, 1, 0, 1), Ok(2));
    }

    #[test]
    fn ceil_drops_a_last_window_that_starts_in_the_end_padding() {
        // size 4, pads 1 and 1, kernel 2, stride 2: ceil (6 - 2) / 2 + 1 = 3 exactly (floor agrees).
        assert_eq!(ceil_out(4, 2, 2, 1, 1, 1), Ok(3));
        assert_eq!(ceil_extra_end(4, 2, 2, 1, 1, 1), Ok(0));
        // onnx's test_maxpool_2d_ceil_output_size_reduce_by_one: size 2, kernel 1, stride 2: ceil
        // (2 - 1) / 2 + 1 = 2, but the second window would start at 2 = size, in the end padding:
        // dropped, 1 (as floor).
        assert_eq!(ceil_out(2, 1, 2, 1, 0, 0), Ok(1));
        assert_eq!(ceil_extra_end(2, 1, 2, 1, 0, 0), Ok(0));
        // onnx's test_averagepool_2d_ceil_last_window_starts_on_pad: size 4, begin pad 1, kernel 3,
        // stride 2 -> ceil (5 - 3) / 2 + 1 = 2, the last window starts at 2 < 5.
        assert_eq!(ceil_out(4, 3, 2, 1, 1, 0), Ok(2));
    }

    #[test]
    fn ceil_counts_the_dilated_span() {
        // size 7, kernel 2, dilation 3 (span 4), stride 2: ceil (7 - 4) / 2 + 1 = 3, window 3 covers
        // 4..8: one extra cell.
        assert_eq!(ceil_out(7, 2, 2, 3, 0, 0), Ok(3));
        assert_eq!(ceil_extra_end(7, 2, 2, 3, 0, 0), Ok(1));
        assert_eq!(window_out(7, 2, 2, 3, 0, 1), Ok(3));
    }

    #[test]
    fn ceil_extra_end_gives_the_ceil_size_by_the_floor_rule() {
        for size in 1..12 {
            for kernel in 1..5 {
                for stride in 1..5 {
                    for dilation in 1..3 {
                        for (begin, end) in [(0, 0), (1, 0), (0, 1), (1, 2), (2, 1)] {
                            // Pads as wide as the window are refused before (ONNX and Ember).
                            if begin >= kernel || end >= kernel {
                                continue;
                            }
                            let Ok(out) = ceil_out(size, kernel, stride, dilation, begin, end)
                            else {
                                continue;
                            };
                            let floor = window_out(size, kernel, stride, dilation, begin, end);
                            let extra = ceil_extra_end(size, kernel, stride, dilation, begin, end);
                            // Only where the end padding holds a whole window does ceil round
                            // below floor; that is refused.
                            let Ok(extra) = extra else {
                                assert!(floor.unwrap() > out);
                                continue;
                            };
                            let floor =
                                window_out(size, kernel, stride, dilation, begin, end + extra);
                            assert_eq!(
                                floor,
                                Ok(out),
                                "{size} {kernel} {stride} {dilation} {begin} {end}"
                            );
                            // The last window still starts inside the input or its begin padding.
                            assert!(
                                (out - 1) * stride < size + begin,
                                "{size} {kernel} {stride} {dilation} {begin} {end}"
                            );
                            assert!(end + extra < dilation * (kernel - 1) + 1 || extra == 0);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn ceil_rejects_bad_numbers() {
        assert!(ceil_out(4, 0, 1, 1, 0, 0).is_err());
        assert!(ceil_out(4, 2, 0, 1, 0, 0).is_err());
        assert!(ceil_out(1, 3, 1, 1, 0, 0).is_err());
        // size 1, end pad 1, kernel 1: floor gives 2 (the second window all padding), ceil 1.
        assert_eq!(ceil_out(1, 1, 1, 1, 0, 1), Ok(1));
        assert!(ceil_extra_end(1, 1, 1, 1, 0, 1).is_err());
    }
}
