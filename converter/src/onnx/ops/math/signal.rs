//! ONNX's signal ops: `DFT` (opsets 17 and 20) and `STFT` (17) onto the blob's [`OpKind::Dft`];
//! `HannWindow`, `HammingWindow`, `BlackmanWindow` and `MelWeightMatrix` (17), whose inputs are
//! sizes and frequencies, folded into constants (their inputs must be constants, as they are in the
//! exported front ends).

use ember_core::ops::math::dft::DftParams;
use ember_core::OpKind;

use crate::ir::shape::resolve_axis;
use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::super::array::shape::bind_constant;

/// The most elements a folded window or mel matrix may hold (2^24), so that a hostile size is an
/// error before anything is allocated.
const MAX_ELEMENTS: usize = 1 << 24;

/// A 0/1 attribute, `default` when absent.
fn flag(ctx: &NodeCtx<'_>, name: &str, default: bool) -> Result<bool, ConvertError> {
    match ctx.attr_int(name)? {
        None => Ok(default),
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        Some(v) => Err(ctx.err(format!("attribute {name}={v} must be 0 or 1"))),
    }
}

/// A constant integer scalar input.
fn const_int(ctx: &NodeCtx<'_>, k: usize, what: &str) -> Result<i64, ConvertError> {
    let id = ctx.input(k, what)?;
    match ctx.const_ints(id, what)?.as_slice() {
        [v] => Ok(*v),
        v => Err(ctx.err(format!("{what} must hold one value, it holds {}", v.len()))),
    }
}

/// A length (`dft_length`, `frame_length`, a window's size): at least 1, at most 2^24.
fn length(ctx: &NodeCtx<'_>, v: i64, what: &str) -> Result<u32, ConvertError> {
    match u32::try_from(v) {
        Ok(n) if n >= 1 && (n as usize) <= MAX_ELEMENTS => Ok(n),
        _ => Err(ctx.err(format!("{what} is {v}; it must be 1 to 2^24"))),
    }
}

/// Imports `DFT`: the axis is an attribute before opset 20 and an input from it.
pub fn import_dft(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let dims = ctx.shape(x);
    let rank = dims.len();
    let axis = if ctx.opset >= 20 {
        match ctx.opt_input(2)? {
            Some(_) => const_int(ctx, 2, "input axis")?,
            None => -2,
        }
    } else {
        ctx.attr_int("axis")?.unwrap_or(1)
    };
    let axis = resolve_axis(axis, rank)
        .ok()
        .filter(|&a| a + 1 < rank)
        .ok_or_else(|| {
            ctx.err(format!(
                "axis {axis} must name an axis of the signal, below the last (complex) axis of the \
                 rank-{rank} input"
            ))
        })?;
    let inverse = flag(ctx, "inverse", false)?;
    let onesided = flag(ctx, "onesided", false)?;
    let n = match ctx.opt_input(1)? {
        Some(_) => length(ctx, const_int(ctx, 1, "input dft_length")?, "dft_length")?,
        // The inverse of a one-sided spectrum of `m` bins has `2 (m - 1)` samples by default.
        None if inverse && onesided => length(
            ctx,
            2 * (dims[axis] as i64 - 1),
            "the default length 2 x (bins - 1)",
        )?,
        None => length(ctx, dims[axis] as i64, "the signal's length")?,
    };
    let params = DftParams {
        axis: u8::try_from(axis).map_err(|_| ctx.err("axis is too large"))?,
        length: n,
        inverse,
        onesided,
        frame_step: 0,
    };
    ctx.emit(Op::Core(OpKind::Dft(params)), vec![x])?;
    Ok(())
}

/// Imports `STFT`: the frame length is `frame_length`, else the window's, else the signal's. A
/// `[batch, length]` signal is taken as real, as onnxruntime takes it.
pub fn import_stft(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let mut x = ctx.input(0, "signal")?;
    let mut dims = ctx.shape(x);
    if dims.len() == 2 {
        // `[batch, length]`, a real signal (onnxruntime takes it too).
        dims.push(1);
        x = ctx.emit_tmp("real", Op::Reshape { shape: dims.clone() }, vec![x])?;
    }
    if dims.len() != 3 || !matches!(dims[2], 1 | 2) {
        return Err(ctx.err(format!(
            "the signal must be [batch, length, 1 or 2] (or [batch, length], real), it is \
             {dims:?}"
        )));
    }
    let step = const_int(ctx, 1, "input frame_step")?;
    let step = u32::try_from(step)
        .ok()
        .filter(|&s| s >= 1)
        .ok_or_else(|| ctx.err(format!("frame_step is {step}; it must be at least 1")))?;
    let window = ctx.opt_input(2)?;
    let window_len = window.map(|w| ctx.shape(w));
    let n = match (ctx.opt_input(3)?, &window_len) {
        (Some(_), _) => length(ctx, const_int(ctx, 3, "input frame_length")?, "frame_length")?,
        (None, Some(w)) if w.len() == 1 => length(ctx, w[0] as i64, "the window's length")?,
        (None, Some(w)) => {
            return Err(ctx.err(format!("the window must be 1-D, it is {w:?}")));
        }
        (None, None) => length(ctx, dims[1] as i64, "the signal's length")?,
    };
    if let Some(w) = &window_len {
        if w.as_slice() != [n as usize] {
            return Err(ctx.err(format!(
                "the window is {w:?}; it must be [{n}], the frame length"
            )));
        }
    }
    if (n as usize) > dims[1] {
        return Err(ctx.err(format!(
            "the frame length {n} is longer than the signal ({})",
            dims[1]
        )));
    }
    let onesided = flag(ctx, "onesided", true)?;
    let params = DftParams {
        axis: 1,
        length: n,
        inverse: false,
        onesided,
        frame_step: step,
    };
    let inputs = [Some(x), window].into_iter().flatten().collect();
    ctx.emit(Op::Core(OpKind::Dft(params)), inputs)?;
    Ok(())
}

/// `output_datatype` must be FLOAT (1, the default): Ember folds the constants as f32.
fn float_output(ctx: &NodeCtx<'_>) -> Result<(), ConvertError> {
    match ctx.attr_int("output_datatype")? {
        None | Some(1) => Ok(()),
        Some(t) => Err(ctx.err(format!(
            "output_datatype={t} is not supported; Ember folds this op as FLOAT (1)"
        ))),
    }
}

/// Imports `HannWindow`, `HammingWindow` and `BlackmanWindow` as constants: the generalized cosine
/// window `a0 - a1 cos(2πn/N) + a2 cos(4πn/N)`, `N` the size when `periodic` (the default), else
/// the size minus 1.
pub fn import_window(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let size = const_int(ctx, 0, "input size")?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= MAX_ELEMENTS)
        .ok_or_else(|| ctx.err(format!("size is {size}; it must be 0 to 2^24")))?;
    float_output(ctx)?;
    let periodic = flag(ctx, "periodic", true)?;
    let (a0, a1, a2) = match ctx.node.op_type.as_str() {
        "HannWindow" => (0.5, 0.5, 0.0),
        "HammingWindow" => (25.0 / 46.0, 21.0 / 46.0, 0.0),
        _ => (0.42, 0.5, 0.08),
    };
    let period = if periodic { size } else { size.saturating_sub(1) } as f64;
    let values = (0..size)
        .map(|i| {
            let t = core::f64::consts::TAU * i as f64 / period;
            (a0 - a1 * t.cos() + a2 * (2.0 * t).cos()) as f32
        })
        .collect();
    bind_constant(ctx, vec![size], ConstData::F32(values))
}

/// Imports `MelWeightMatrix` as a constant `[dft_length / 2 + 1, num_mel_bins]`: triangular filters
/// between `num_mel_bins + 2` points evenly spaced on the mel scale (`2595 log10(1 + f / 700)`) from
/// `lower_edge_hertz` to `upper_edge_hertz`, each point at the spectrogram bin `floor((dft_length +
/// 1) f / sample_rate)`, as ONNX's reference implementation places them (its step divides the mel
/// range by `num_mel_bins + 2`).
pub fn import_mel_weight_matrix(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let mels = const_int(ctx, 0, "input num_mel_bins")?;
    let dft_length = const_int(ctx, 1, "input dft_length")?;
    let rate = const_int(ctx, 2, "input sample_rate")?;
    let lower = ctx.const_scalar(ctx.input(3, "lower_edge_hertz")?, "input lower_edge_hertz")?;
    let upper = ctx.const_scalar(ctx.input(4, "upper_edge_hertz")?, "input upper_edge_hertz")?;
    float_output(ctx)?;
    let (Ok(mels), Ok(dft_length)) = (usize::try_from(mels), usize::try_from(dft_length)) else {
        return Err(ctx.err(format!(
            "num_mel_bins ({mels}) and dft_length ({dft_length}) must not be negative"
        )));
    };
    let bins = dft_length / 2 + 1;
    if rate <= 0 || bins.saturating_mul(mels) > MAX_ELEMENTS {
        return Err(ctx.err(format!(
            "sample_rate {rate} must be positive and the matrix ({bins} x {mels}) at most 2^24 \
             elements"
        )));
    }
    // The edges' mels as f32 (the inputs' type), the points in f64.
    let mel = |f: f32| 2595.0 * (1.0 + f / 700.0).log10();
    let (low, high) = (f64::from(mel(lower)), f64::from(mel(upper)));
    let step = (high - low) / (mels + 2) as f64;
    let points: Vec<i64> = (0..mels + 2)
        .map(|i| {
            let hz = 700.0 * (10f64.powf((i as f64 * step + low) / 2595.0) - 1.0);
            (((dft_length + 1) as f64 * hz) / rate as f64).floor() as i64
        })
        .collect();
    let mut matrix = vec![0.0f32; bins * mels];
    let mut set = |j: i64, i: usize, v: f64| -> Result<(), ConvertError> {
        let j = usize::try_from(j).ok().filter(|&j| j < bins).ok_or_else(|| {
            ctx.err(format!(
                "a filter falls on bin {j}, outside the {bins} bins (check the edges against \
                 sample_rate / 2)"
            ))
        })?;
        matrix[j * mels + i] = v as f32;
        Ok(())
    };
    for i in 0..mels {
        let (left, center, right) = (points[i], points[i + 1], points[i + 2]);
        if center == left {
            set(center, i, 1.0)?;
        } else {
            for j in left..=center {
                set(j, i, (j - left) as f64 / (center - left) as f64)?;
            }
        }
        for j in center..right {
            set(j, i, (right - j) as f64 / (right - center) as f64)?;
        }
    }
    bind_constant(ctx, vec![bins, mels], ConstData::F32(matrix))
}
