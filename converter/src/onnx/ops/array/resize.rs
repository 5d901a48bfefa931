//! ONNX `Resize` (opset 10 and up) of the last two axes of a tensor (H and W of NCHW; the scales of
//! the other axes must be 1): `nearest` (every `nearest_mode`), `linear` (bilinear) and `cubic`
//! (bicubic, any `cubic_coeff_a`, `exclude_outside`), `antialias` for linear and cubic, with the
//! `half_pixel`, `half_pixel_symmetric`, `pytorch_half_pixel`, `align_corners` and `asymmetric`
//! coordinate transformations. Scales or sizes must be constant. `tf_crop_and_resize` and
//! `keep_aspect_ratio_policy` other than `stretch` are errors. Also the deprecated `Upsample`.
//! The layout pass runs a Resize of an NHWC activation channels-last.

use ember_core::ops::array::resize::{CoordMode, NearestMode, ResizeMode, ResizeParams};

use crate::ir::shape::resolve_axis;
use crate::ir::op::Resize;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Resize`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let dims = ctx.shape(x);
    let rank = dims.len();
    if rank < 2 {
        return Err(ctx.err(format!("input {dims:?} must have rank >= 2")));
    }
    let string = |name: &str, default: &str| -> Result<String, ConvertError> {
        Ok(ctx.attr_string(name)?.unwrap_or_else(|| default.into()))
    };
    // Both only matter to linear and cubic; nearest ignores them.
    let antialias = ctx.attr_int("antialias")?.unwrap_or(0) != 0;
    let exclude_outside = ctx.attr_int("exclude_outside")?.unwrap_or(0) != 0;
    let policy = string("keep_aspect_ratio_policy", "stretch")?;
    if policy != "stretch" {
        return Err(ctx.err(format!(
            "attribute keep_aspect_ratio_policy={policy} is not supported (stretch only)"
        )));
    }
    let axes: Vec<usize> = match ctx.attr_ints("axes")? {
        Some(a) => a
            .iter()
            .map(|&a| resolve_axis(a, rank))
            .collect::<Result<_, _>>()
            .map_err(|e| ctx.err(format!("attribute axes: {e}")))?,
        None => (0..rank).collect(),
    };
    // Per-axis scales (f32, as ONNX computes the coordinates) and output sizes.
    let mut scales = vec![1.0f32; rank];
    let mut out = dims.clone();
    let (scales_in, sizes_in) = if ctx.opset >= 11 {
        (ctx.opt_input(2)?, ctx.opt_input(3)?)
    } else {
        (Some(ctx.input(1, "scales")?), None)
    };
    let given_scales = match scales_in {
        Some(s) if !ctx.graph().tensor(s).shape.contains(&0) => Some(s),
        _ => None,
    };
    match (given_scales, sizes_in) {
        (Some(s), None) => {
            let v = ctx
                .const_f32(s)
                .ok_or_else(|| ctx.err("input scales must be a constant FLOAT tensor"))?
                .to_vec();
            if v.len() != axes.len() {
                return Err(ctx.err(format!("scales {v:?} must have one value per axis")));
            }
            for (&a, &sc) in axes.iter().zip(&v) {
                if !(sc > 0.0 && sc.is_finite()) {
                    return Err(ctx.err(format!("scales {v:?} must be positive")));
                }
                scales[a] = sc;
                out[a] = (dims[a] as f64 * f64::from(sc)).floor() as usize;
            }
        }
        (None, Some(s)) => {
            let v = ctx.const_sizes(s, "input sizes")?;
            if v.len() != axes.len() {
                return Err(ctx.err(format!("sizes {v:?} must have one value per axis")));
            }
            for (&a, &size) in axes.iter().zip(&v) {
                out[a] = size;
                scales[a] = if dims[a] == 0 {
                    1.0
                } else {
                    size as f32 / dims[a] as f32
                };
            }
        }
        _ => return Err(ctx.err("exactly one of scales and sizes must be given")),
    }
    if let Some(a) = (0..rank - 2).find(|&a| out[a] != dims[a]) {
        return Err(ctx.err(format!(
            "resizing axis {a} is not supported; Ember resizes the last two axes (H and W)"
        )));
    }
    if ctx.attr_string("coordinate_transformation_mode")?.as_deref() == Some("tf_crop_and_resize") {
        return Err(ctx.err(
            "attribute coordinate_transformation_mode=tf_crop_and_resize is not supported (its roi \
             input and extrapolation_value have no place in Ember's resize)",
        ));
    }
    let coord = if ctx.opset >= 11 {
        ctx.attr_choice(
            "coordinate_transformation_mode",
            "half_pixel",
            &[
                ("half_pixel", CoordMode::HalfPixel),
                ("pytorch_half_pixel", CoordMode::PytorchHalfPixel),
                ("align_corners", CoordMode::AlignCorners),
                ("asymmetric", CoordMode::Asymmetric),
                ("half_pixel_symmetric", CoordMode::HalfPixelSymmetric),
            ],
        )?
    } else {
        CoordMode::Asymmetric
    };
    // Read (and checked) whatever the mode: exporters write it for linear resizes too.
    let nearest = if ctx.opset >= 11 {
        ctx.attr_choice(
            "nearest_mode",
            "round_prefer_floor",
            &[
                ("round_prefer_floor", NearestMode::RoundPreferFloor),
                ("round_prefer_ceil", NearestMode::RoundPreferCeil),
                ("floor", NearestMode::Floor),
                ("ceil", NearestMode::Ceil),
            ],
        )?
    } else {
        NearestMode::Floor
    };
    // Read whatever the mode: exporters write it for every mode (PyTorch's bilinear upsampling too).
    let cubic_a = ctx.attr_float("cubic_coeff_a")?.unwrap_or(-0.75);
    let mode = match string("mode", "nearest")?.as_str() {
        "nearest" if ctx.opset < 11 => {
            // Opset 10 rounds down when upsampling (onnxruntime's "simple" mode).
            if scales.iter().any(|&s| s < 1.0) {
                return Err(ctx.err("nearest downsampling is not supported before opset 11"));
            }
            ResizeMode::Nearest(NearestMode::Floor)
        }
        "nearest" => ResizeMode::Nearest(nearest),
        "linear" if antialias => ResizeMode::LinearAntialias { exclude_outside },
        // Plain bilinear never reads off the input (coordinates are clamped): `exclude_outside`
        // changes nothing.
        "linear" => ResizeMode::Linear,
        "cubic" if ctx.opset >= 11 => {
            let a = cubic_a;
            if !a.is_finite() {
                return Err(ctx.err(format!("attribute cubic_coeff_a={a} must be finite")));
            }
            ResizeMode::Cubic {
                a,
                exclude_outside,
                antialias,
            }
        }
        other => {
            return Err(ctx.err(format!(
                "attribute mode={other} is not supported (nearest, linear, or cubic from opset 11)"
            )))
        }
    };
    let params = ResizeParams {
        mode,
        coord,
        scale_h: scales[rank - 2],
        scale_w: scales[rank - 1],
        // The layout pass switches it on for NHWC activations.
        channels_last: false,
    };
    let size = [out[rank - 2], out[rank - 1]];
    if size == [dims[rank - 2], dims[rank - 1]] && scales.iter().all(|&s| s == 1.0) {
        ctx.emit(Op::Reshape { shape: out }, vec![x])?;
        return Ok(());
    }
    ctx.emit(Op::Resize(Resize { params, size }), vec![x])?;
    Ok(())
}

/// Imports `Upsample` (deprecated since opset 10): `nearest` (rounding down) or `linear`, with the
/// asymmetric coordinate transformation, scales an attribute (opset 7) or a constant input (opset 9).
pub fn import_upsample(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let dims = ctx.shape(x);
    let rank = dims.len();
    let scales = if ctx.opset >= 9 {
        let s = ctx.input(1, "scales")?;
        ctx.const_f32(s)
            .ok_or_else(|| ctx.err("input scales must be a constant FLOAT tensor"))?
            .to_vec()
    } else {
        ctx.attr_floats("scales")?
            .ok_or_else(|| ctx.err("attribute scales is required"))?
    };
    if rank < 2 || scales.len() != rank {
        return Err(ctx.err(format!(
            "scales {scales:?} must have one value per axis of {dims:?} (rank >= 2)"
        )));
    }
    if scales.iter().any(|&s| !(s >= 1.0 && s.is_finite())) {
        return Err(ctx.err(format!("scales {scales:?} must be at least 1")));
    }
    if scales[..rank - 2].iter().any(|&s| s != 1.0) {
        return Err(ctx.err(format!(
            "scales {scales:?} resize an axis other than the last two (H and W), which is not \
             supported"
        )));
    }
    let mode = match ctx
        .attr_string("mode")?
        .unwrap_or_else(|| "nearest".into())
        .as_str()
    {
        "nearest" => ResizeMode::Nearest(NearestMode::Floor),
        "linear" | "bilinear" => ResizeMode::Linear,
        other => {
            return Err(ctx.err(format!(
                "attribute mode={other} is not supported (nearest or linear)"
            )))
        }
    };
    let out = |a: usize| (dims[a] as f64 * f64::from(scales[a])).floor() as usize;
    let params = ResizeParams {
        mode,
        coord: CoordMode::Asymmetric,
        scale_h: scales[rank - 2],
        scale_w: scales[rank - 1],
        channels_last: false,
    };
    let size = [out(rank - 2), out(rank - 1)];
    ctx.emit(Op::Resize(Resize { params, size }), vec![x])?;
    Ok(())
}
