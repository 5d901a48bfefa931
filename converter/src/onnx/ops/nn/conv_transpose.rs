//! ONNX `ConvTranspose` (1-D and 2-D) to [`Op::ConvTranspose2d`] in NCHW form; the layout pass later
//! moves it to NHWC and its weights from OIHW to OHWI.
//!
//! Inputs: `X [N, C, H, W]` (or `[N, C, L]`), constant `W [C, M/group, KH, KW]` (or `[C, M/group, K]`),
//! optional constant `B [M]`. The weights are rearranged at conversion time into the IR's
//! `[M, C/group, KH, KW]` (see [`crate::ir::op::nn`]).
//!
//! Attributes: `strides`, `dilations` (default 1), `output_padding` (default 0), `group` (default 1),
//! `kernel_shape` (must match `W`), and the padding, resolved to explicit numbers per axis from the
//! full output length `full = stride * (in - 1) + output_padding + dilation * (k - 1) + 1`:
//! - `output_shape` (spatial dims, or all dims with `[N, M]` first): `total = full - out` is split
//!   between the ends, the odd cell at the end for `SAME_UPPER` and at the beginning otherwise (as
//!   onnxruntime does); an output longer than `full` gets the difference as extra output padding.
//!   Explicit non-zero `pads` together with `output_shape` are an error (the spec ignores them,
//!   onnxruntime and the reference implementation disagree).
//! - `auto_pad=SAME_UPPER/SAME_LOWER`: the same with `out = in * stride`; an output longer than
//!   `full` there would need negative padding and is an error.
//! - `auto_pad=NOTSET` (default) with `pads [begin..., end...]` (default 0), or `VALID` (no pads).
//!
//! A 1-D transposed convolution runs as the 2-D one over `[N, C, 1, L]` (a Reshape in front of the
//! input and one after the output), as `Conv` does.

use ember_core::ops::math::activation::Activation;

use crate::ir::op::nn::{conv_transpose_len, ConvTranspose2d};
use crate::ir::{ConstData, Op, SpatialLayout};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `ConvTranspose`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let (x, w, b, xs, ws) = super::conv::inputs(ctx, "transposed convolution")?;
    let one_d = xs.len() == 3;
    let Some(w_data) = ctx.const_f32(w).map(<[f32]>::to_vec) else {
        return Err(ctx.err(format!(
            "weights W (\"{}\") must be a FLOAT initializer or constant",
            ctx.graph().tensor(w).name
        )));
    };
    let groups = super::conv::groups(ctx)?;
    let channels = xs[1];
    if ws.len() != xs.len() || ws[0] != channels || !channels.is_multiple_of(groups) {
        let want = if one_d {
            "[C, M/group, K]"
        } else {
            "[C, M/group, KH, KW]"
        };
        return Err(ctx.err(format!(
            "weights W have shape {ws:?}; expected {want} with C = {channels} (the input's \
             channels, a multiple of group = {groups})"
        )));
    }
    if let Some(b) = b {
        if ctx.const_f32(b).is_none() {
            return Err(ctx.err(format!(
                "bias B (\"{}\") must be a FLOAT initializer or constant",
                ctx.graph().tensor(b).name
            )));
        }
    }
    let kernel = ws[2..].to_vec();
    if let Some(k) = ctx.attr_sizes("kernel_shape", 1)? {
        if k != kernel {
            return Err(ctx.err(format!(
                "attribute kernel_shape={k:?} does not match the weights' kernel {kernel:?}"
            )));
        }
    }
    let spatial = xs[2..].to_vec();
    let axes = resolve_axes(ctx, &spatial, &kernel)?;

    // The IR's weights: [M, C/group, K...] from ONNX's [C, M/group, K...].
    let (group_in, group_out) = (channels / groups, ws[1]);
    let taps: usize = kernel.iter().product();
    let mut w_ir = vec![0.0f32; w_data.len()];
    for g in 0..groups {
        for c in 0..group_in {
            for m in 0..group_out {
                let src = ((g * group_in + c) * group_out + m) * taps;
                let dst = ((g * group_out + m) * group_in + c) * taps;
                w_ir[dst..dst + taps].copy_from_slice(&w_data[src..src + taps]);
            }
        }
    }
    let w_shape = if one_d {
        vec![groups * group_out, group_in, 1, kernel[0]]
    } else {
        vec![groups * group_out, group_in, kernel[0], kernel[1]]
    };
    let w2 = ctx.add_constant("weights", w_shape, ConstData::F32(w_ir));

    // Per-axis values, as 2-D: a 1-D op's H axis has stride 1, dilation 1 and no padding.
    let pick = |f: fn(&Axis) -> usize, fill: usize| -> [usize; 2] {
        match axes.as_slice() {
            [l] => [fill, f(l)],
            [h, w] => [f(h), f(w)],
            _ => [fill; 2],
        }
    };
    let [begin_h, begin_w] = pick(|a| a.pads[0], 0);
    let [end_h, end_w] = pick(|a| a.pads[1], 0);
    let op = Op::ConvTranspose2d(ConvTranspose2d {
        strides: pick(|a| a.stride, 1),
        dilations: pick(|a| a.dilation, 1),
        pads: [begin_h, begin_w, end_h, end_w],
        output_padding: pick(|a| a.output_padding, 0),
        groups,
        act: Activation::None,
        layout: SpatialLayout::Nchw,
    });
    if !one_d {
        ctx.emit(op, [x, w2].into_iter().chain(b).collect())?;
        return Ok(());
    }
    let x2 = super::conv::reshape_to_2d(ctx, "as_2d", x)?;
    let inputs = [x2, w2].into_iter().chain(b).collect();
    // The convolution carries the ONNX node's name (fused names read `deconv+relu`).
    super::conv::emit_1d_as_2d(ctx, "conv_transpose_2d", op, inputs)
}

/// One spatial axis, resolved.
struct Axis {
    stride: usize,
    dilation: usize,
    /// `[begin, end]`, cropped from the full output.
    pads: [usize; 2],
    output_padding: usize,
}

/// Reads an attribute with one value per spatial axis, or `default` for each when absent.
fn per_axis(
    ctx: &NodeCtx<'_>,
    name: &str,
    axes: usize,
    min: i64,
    default: usize,
) -> Result<Vec<usize>, ConvertError> {
    match ctx.attr_sizes(name, min)? {
        None => Ok(vec![default; axes]),
        Some(v) if v.len() == axes => Ok(v),
        Some(v) => Err(ctx.err(format!(
            "attribute {name}={v:?} must have {axes} value(s), one per spatial axis"
        ))),
    }
}

/// Resolves strides, dilations, output padding and padding of each spatial axis (see the module
/// documentation for the rules).
fn resolve_axes(
    ctx: &NodeCtx<'_>,
    spatial: &[usize],
    kernel: &[usize],
) -> Result<Vec<Axis>, ConvertError> {
    let nd = spatial.len();
    let strides = per_axis(ctx, "strides", nd, 1, 1)?;
    let dilations = per_axis(ctx, "dilations", nd, 1, 1)?;
    let output_padding = per_axis(ctx, "output_padding", nd, 0, 0)?;
    let pads = match ctx.attr_sizes("pads", 0)? {
        None => None,
        Some(p) if p.len() == 2 * nd => Some(p),
        Some(p) => {
            return Err(ctx.err(format!(
                "attribute pads={p:?} must have {} values [begin..., end...]",
                2 * nd
            )))
        }
    };
    let output_shape = match ctx.attr_sizes("output_shape", 0)? {
        None => None,
        Some(s) if s.len() == nd => Some(s),
        Some(s) if s.len() == nd + 2 => Some(s[2..].to_vec()),
        Some(s) => {
            return Err(ctx.err(format!(
                "attribute output_shape={s:?} must have {nd} values (the spatial dims) or {} (all \
                 dims)",
                nd + 2
            )))
        }
    };
    let auto_pad = ctx.attr_string("auto_pad")?.unwrap_or_default();
    let auto_pad = match auto_pad.as_str() {
        "" | "NOTSET" => "NOTSET",
        "VALID" | "SAME_UPPER" | "SAME_LOWER" => auto_pad.as_str(),
        other => {
            return Err(ctx.err(format!(
                "attribute auto_pad={other} is not valid; expected NOTSET, VALID, SAME_UPPER or \
                 SAME_LOWER"
            )))
        }
    };
    let nonzero_pads = pads.as_ref().is_some_and(|p| p.iter().any(|&v| v != 0));
    if nonzero_pads && output_shape.is_some() {
        return Err(ctx.err(
            "attributes pads and output_shape are both given; the padding follows from \
             output_shape, so give only one of them",
        ));
    }
    if nonzero_pads && auto_pad != "NOTSET" {
        return Err(ctx.err(format!(
            "attribute auto_pad={auto_pad} cannot be combined with explicit pads"
        )));
    }
    let mut axes = Vec::with_capacity(nd);
    for i in 0..nd {
        let (stride, dilation) = (strides[i], dilations[i]);
        let full = conv_transpose_len(
            spatial[i],
            kernel[i],
            stride,
            dilation,
            [0, 0],
            output_padding[i],
        )
        .map_err(|e| ctx.err(format!("spatial axis {i}: {e}")))?;
        // The wanted output length, when the attributes fix it rather than the pads.
        let target = match (&output_shape, auto_pad) {
            (Some(s), _) => Some(s[i]),
            (None, "SAME_UPPER" | "SAME_LOWER") => {
                Some(spatial[i].checked_mul(stride).ok_or_else(|| {
                    ctx.err(format!("spatial axis {i}: the output size overflows"))
                })?)
            }
            _ => None,
        };
        let axis = match target {
            Some(out) if out <= full => {
                let total = full - out;
                let (small, large) = (total / 2, total - total / 2);
                let pads = if auto_pad == "SAME_UPPER" {
                    [small, large]
                } else {
                    [large, small]
                };
                Axis {
                    stride,
                    dilation,
                    pads,
                    output_padding: output_padding[i],
                }
            }
            Some(out) if output_shape.is_some() => Axis {
                stride,
                dilation,
                pads: [0, 0],
                output_padding: output_padding[i] + (out - full),
            },
            Some(out) => {
                return Err(ctx.err(format!(
                    "auto_pad={auto_pad} asks for output length {out} (input {} x stride {stride}) \
                     on spatial axis {i}, longer than the full transposed convolution ({full}); \
                     that needs negative padding, which is not supported. Give pads or \
                     output_shape instead",
                    spatial[i]
                )))
            }
            None => Axis {
                stride,
                dilation,
                pads: pads.as_ref().map_or([0, 0], |p| [p[i], p[nd + i]]),
                output_padding: output_padding[i],
            },
        };
        conv_transpose_len(
            spatial[i],
            kernel[i],
            stride,
            dilation,
            axis.pads,
            axis.output_padding,
        )
        .map_err(|e| ctx.err(format!("spatial axis {i}: {e}")))?;
        axes.push(axis);
    }
    Ok(axes)
}
