//! The neural-network ops of the IR and their shape (and, where they are not FLOAT only, dtype)
//! inference: convolution and fully connected ([`Op::Conv2d`](super::Op::Conv2d),
//! [`Op::FullyConnected`](super::Op::FullyConnected), which the int8 ops of [`crate::ir::quant`]
//! share, and [`Op::FullyConnectedW8`](super::Op::FullyConnectedW8)); the transposed convolution
//! ([`Op::ConvTranspose2d`](super::Op::ConvTranspose2d)); the ops along axes
//! ([`Op::Softmax`](super::Op::Softmax), [`Op::LogSoftmax`](super::Op::LogSoftmax),
//! [`Op::Reduce`](super::Op::Reduce), [`Op::ArgReduce`](super::Op::ArgReduce)); and the
//! normalization ([`Op::BatchNorm`](super::Op::BatchNorm)).
//! Also the [`SpatialLayout`] every spatial op carries.
//!
//! A transposed convolution's weights are stored like a [`Conv2d`]'s in the same layout (OIHW for
//! `Nchw`, OHWI for `Nhwc`), with `O` the output channels and `I` the input channels of one group: the
//! importer moves ONNX's `[C, M / group, KH, KW]` there at conversion time, so the layout pass treats
//! both convolutions alike and the runtime kernel reads the weights of one output channel
//! contiguously.

use ember_core::ops::math::activation::Activation;

use crate::ir::shape::window_out;
use crate::ir::DType;

/// Data layout of a spatial op's 4-D input and output (and of a convolution's weights: OIHW for
/// `Nchw`, OHWI for `Nhwc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpatialLayout {
    /// ONNX's layout, as imported.
    Nchw,
    /// Ember's layout, after the layout pass.
    Nhwc,
}

/// A 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv2d {
    /// `[h, w]`.
    pub strides: [usize; 2],
    /// `[h, w]`.
    pub dilations: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [usize; 4],
    /// Groups (input and output channels are multiples of it).
    pub groups: usize,
    /// Fused activation.
    pub act: Activation,
    /// Layout of input, weights and output.
    pub layout: SpatialLayout,
}

/// The output dims of a convolution with input `x`, weights `w` and bias `b`, or why they do not fit.
pub(crate) fn infer_conv(
    c: &Conv2d,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    conv_output(c.layout, c.groups, x, w, b, |axis, len, kernel| {
        let (begin, end) = (c.pads[axis], c.pads[axis + 2]);
        window_out(len, kernel, c.strides[axis], c.dilations[axis], begin, end)
    })
}

/// A 2-D transposed convolution, every attribute resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvTranspose2d {
    /// `[h, w]`.
    pub strides: [usize; 2],
    /// `[h, w]`.
    pub dilations: [usize; 2],
    /// Cropped from the full output: `[top, left, bottom, right]`.
    pub pads: [usize; 4],
    /// Added after the full output (seeing only the bias): `[h, w]`.
    pub output_padding: [usize; 2],
    /// Groups (input and output channels are multiples of it).
    pub groups: usize,
    /// Fused activation.
    pub act: Activation,
    /// Layout of input, weights and output.
    pub layout: SpatialLayout,
}

/// Output length of a transposed convolution along one axis:
/// `stride * (size - 1) + output_padding + dilation * (kernel - 1) + 1 - pad_begin - pad_end`.
pub fn conv_transpose_len(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pads: [usize; 2],
    output_padding: usize,
) -> Result<usize, String> {
    if size == 0 || kernel == 0 || stride == 0 || dilation == 0 {
        return Err(format!(
            "input size {size}, kernel {kernel}, stride {stride} and dilation {dilation} must all \
             be at least 1"
        ));
    }
    let full = (size - 1)
        .checked_mul(stride)
        .and_then(|s| s.checked_add(output_padding))
        .and_then(|s| s.checked_add((kernel - 1).checked_mul(dilation)?))
        .and_then(|s| s.checked_add(1))
        .ok_or("the output size overflows")?;
    let cropped = pads[0].checked_add(pads[1]).ok_or("padding overflows")?;
    full.checked_sub(cropped).ok_or_else(|| {
        format!("pads {pads:?} crop more than the whole output ({full} before cropping)")
    })
}

/// The output dims of the transposed convolution `c` with input `x`, weights `w` and bias `b`, or
/// why they do not fit.
pub(crate) fn infer_conv_transpose(
    c: &ConvTranspose2d,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    conv_output(c.layout, c.groups, x, w, b, |axis, len, kernel| {
        let pads = [c.pads[axis], c.pads[axis + 2]];
        let (stride, dilation) = (c.strides[axis], c.dilations[axis]);
        conv_transpose_len(len, kernel, stride, dilation, pads, c.output_padding[axis])
    })
}

/// The output dims of a convolution (plain or transposed) in `layout` with `groups`, input `x`,
/// weights `w` (OIHW or OHWI) and bias `b`, its output lengths from `out_len(axis, input length,
/// kernel length)` (axis 0 is H), or why they do not fit.
pub(crate) fn conv_output(
    layout: SpatialLayout,
    groups: usize,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    out_len: impl Fn(usize, usize, usize) -> Result<usize, String>,
) -> Result<Vec<usize>, String> {
    let (n, ch, h, wd) = match (x, layout) {
        ([n, ch, h, wd], SpatialLayout::Nchw) => (*n, *ch, *h, *wd),
        ([n, h, wd, ch], SpatialLayout::Nhwc) => (*n, *ch, *h, *wd),
        _ => return Err(format!("input {x:?} must have rank 4")),
    };
    let (m, wc, kh, kw) = match (w, layout) {
        ([m, wc, kh, kw], SpatialLayout::Nchw) => (*m, *wc, *kh, *kw),
        ([m, kh, kw, wc], SpatialLayout::Nhwc) => (*m, *wc, *kh, *kw),
        _ => return Err(format!("weights {w:?} must have rank 4")),
    };
    let g = groups;
    if g == 0 || ch % g != 0 || m % g != 0 || ch / g != wc {
        return Err(format!(
            "input channels {ch}, output channels {m}, weight channels {wc} and group {g} do not fit \
             (need channels = weight channels x group, both channel counts multiples of group)"
        ));
    }
    if let Some(b) = b {
        if b != [m] {
            return Err(format!("bias {b:?} must be [{m}]"));
        }
    }
    let (oh, ow) = (out_len(0, h, kh)?, out_len(1, wd, kw)?);
    Ok(match layout {
        SpatialLayout::Nchw => vec![n, m, oh, ow],
        SpatialLayout::Nhwc => vec![n, oh, ow, m],
    })
}

/// The output dims of `x [..., IN] W^T` with weights `w [OUT, IN]` and bias `b [OUT]`, or why they
/// do not fit.
pub(crate) fn infer_fully_connected(
    xs: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    let inner = *xs.last().ok_or("the input must have rank >= 1")?;
    if w.len() != 2 || w[1] != inner {
        return Err(format!(
            "weights {w:?} do not fit input {xs:?} (expected [OUT, {inner}])"
        ));
    }
    if let Some(b) = b {
        if *b != [w[0]] {
            return Err(format!("bias {b:?} must be [{}]", w[0]));
        }
    }
    let mut y = xs.to_vec();
    *y.last_mut().ok_or("the input must have rank >= 1")? = w[0];
    Ok(y)
}

/// The output dims of weight-only int8 `x [..., IN]` by `w [OUT, IN]` with `scales [OUT]` and bias
/// `b [OUT]`, or why they do not fit.
pub(crate) fn infer_fully_connected_w8(
    xs: &[usize],
    w: &[usize],
    scales: &[usize],
    b: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    let y = infer_fully_connected(xs, w, b)?;
    if *scales != [w[0]] {
        return Err(format!("scales {scales:?} must be [{}]", w[0]));
    }
    Ok(y)
}

/// The output dtype of weight-only int8 fully connected: FLOAT, from f32 inputs, int8 weights and f32
/// scales.
pub(crate) fn infer_fully_connected_w8_dtype(x: &[DType]) -> Result<DType, String> {
    let want = [DType::F32, DType::I8, DType::F32, DType::F32];
    if x.iter().zip(want).any(|(&t, w)| t != w) {
        return Err("weight-only int8 takes f32 inputs, int8 weights and f32 scales".into());
    }
    Ok(DType::F32)
}

/// The output dims of an op along `axis` that keeps the shape of `x` (Softmax, LogSoftmax), or why
/// the axis does not fit.
pub(crate) fn infer_along_axis(x: &[usize], axis: usize) -> Result<Vec<usize>, String> {
    if axis >= x.len() {
        return Err(format!("axis {axis} is out of range for {x:?}"));
    }
    Ok(x.to_vec())
}

/// The output dims of a reduction of `x` over `axes` (sorted, distinct): those axes dropped, or kept
/// as 1 with `keepdims`.
pub(crate) fn infer_reduce(
    x: &[usize],
    axes: &[usize],
    keepdims: bool,
) -> Result<Vec<usize>, String> {
    if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= x.len()) {
        return Err(format!(
            "axes {axes:?} must be sorted, distinct and below the rank of {x:?}"
        ));
    }
    Ok(x.iter()
        .enumerate()
        .filter_map(|(d, &n)| match axes.contains(&d) {
            true if keepdims => Some(1),
            true => None,
            false => Some(n),
        })
        .collect())
}

/// The output dims of ArgMax or ArgMin of `x` along a non-empty `axis`: that axis dropped, or kept as
/// 1 with `keepdims`.
pub(crate) fn infer_arg_reduce(
    x: &[usize],
    axis: usize,
    keepdims: bool,
) -> Result<Vec<usize>, String> {
    match x.get(axis) {
        None => Err(format!("axis {axis} is out of range for {x:?}")),
        Some(0) => Err(format!("axis {axis} of {x:?} is empty")),
        Some(_) => {
            let mut y = x.to_vec();
            if keepdims {
                y[axis] = 1;
            } else {
                y.remove(axis);
            }
            Ok(y)
        }
    }
}

/// The output dtype of ArgMax or ArgMin of an input of dtype `x[0]`: INT64, from any but Bool.
pub(crate) fn infer_arg_reduce_dtype(x: &[DType]) -> Result<DType, String> {
    let first = x.first().copied().unwrap_or(DType::F32);
    if first == DType::Bool {
        return Err(format!(
            "ArgMax/ArgMin of {} is not supported",
            first.name()
        ));
    }
    Ok(DType::I64)
}

/// The output dims of a batch normalization of `x[0]` over axis 1, with `scale, bias, mean, var` in
/// `x[1..]` shaped `[C]`.
pub(crate) fn infer_batch_norm(x: &[&[usize]]) -> Result<Vec<usize>, String> {
    let xs = x[0];
    let c = *xs
        .get(1)
        .ok_or_else(|| format!("input {xs:?} must have rank >= 2"))?;
    for (what, s) in ["scale", "bias", "mean", "var"].iter().zip(&x[1..]) {
        if *s != [c] {
            return Err(format!("{what} {s:?} must be [{c}]"));
        }
    }
    Ok(xs.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(layout: SpatialLayout, groups: usize) -> Conv2d {
        Conv2d {
            strides: [2, 1],
            dilations: [1, 2],
            pads: [1, 0, 1, 2],
            groups,
            act: Activation::None,
            layout,
        }
    }

    #[test]
    fn conv_output_dims_follow_the_layout() {
        let nchw = conv(SpatialLayout::Nchw, 1);
        let y = infer_conv(&nchw, &[1, 3, 9, 8], &[16, 3, 3, 3], Some(&[16]));
        assert_eq!(y, Ok(vec![1, 16, 5, 6]));
        let nhwc = conv(SpatialLayout::Nhwc, 1);
        let y = infer_conv(&nhwc, &[1, 9, 8, 3], &[16, 3, 3, 3], None);
        assert_eq!(y, Ok(vec![1, 5, 6, 16]));
    }

    #[test]
    fn conv_rejects_channels_that_do_not_fit_the_groups() {
        let depthwise = conv(SpatialLayout::Nchw, 4);
        assert!(infer_conv(&depthwise, &[1, 4, 9, 8], &[4, 1, 3, 3], None).is_ok());
        assert!(infer_conv(&depthwise, &[1, 4, 9, 8], &[4, 2, 3, 3], None).is_err());
        assert!(infer_conv(
            &conv(SpatialLayout::Nchw, 0),
            &[1, 4, 9, 8],
            &[4, 4, 3, 3],
            None
        )
        .is_err());
        assert!(infer_conv(&depthwise, &[1, 4, 9, 8], &[4, 1, 3, 3], Some(&[3])).is_err());
        assert!(infer_conv(&depthwise, &[4, 9, 8], &[4, 1, 3, 3], None).is_err());
    }

    #[test]
    fn fully_connected_replaces_the_last_dim() {
        assert_eq!(
            infer_fully_connected(&[2, 5, 8], &[3, 8], Some(&[3])),
            Ok(vec![2, 5, 3])
        );
        assert!(infer_fully_connected(&[2, 5, 8], &[3, 7], None).is_err());
        assert!(infer_fully_connected(&[2, 5, 8], &[3, 8], Some(&[8])).is_err());
        assert!(infer_fully_connected(&[], &[3, 8], None).is_err());
    }

    #[test]
    fn conv_output_size_follows_the_onnx_formula() {
        // floor((7 + 1 + 1 - 1 * (3 - 1) - 1) / 2) + 1 = 4 on both axes.
        let c = Conv2d {
            strides: [2, 2],
            dilations: [1, 1],
            pads: [1, 1, 1, 1],
            groups: 1,
            act: Activation::None,
            layout: SpatialLayout::Nchw,
        };
        assert_eq!(
            infer_conv(&c, &[2, 3, 7, 7], &[8, 3, 3, 3], None),
            Ok(vec![2, 8, 4, 4])
        );
        // A kernel wider than the padded input has no output.
        assert!(infer_conv(&c, &[2, 3, 7, 7], &[8, 3, 10, 3], None).is_err());
    }

    fn conv_transpose(layout: SpatialLayout) -> ConvTranspose2d {
        ConvTranspose2d {
            strides: [2, 3],
            dilations: [1, 2],
            pads: [1, 0, 1, 1],
            output_padding: [1, 0],
            groups: 2,
            act: Activation::None,
            layout,
        }
    }

    #[test]
    fn conv_transpose_output_size_follows_the_onnx_formula() {
        // stride * (size - 1) + output_padding + dilation * (kernel - 1) + 1 - pads:
        // H: 2 * (3 - 1) + 1 + 1 * (3 - 1) + 1 - 1 - 1 = 6;
        // W: 3 * (4 - 1) + 0 + 2 * (2 - 1) + 1 - 0 - 1 = 11.
        let nchw = conv_transpose(SpatialLayout::Nchw);
        let y = infer_conv_transpose(&nchw, &[1, 4, 3, 4], &[6, 2, 3, 2], Some(&[6]));
        assert_eq!(y, Ok(vec![1, 6, 6, 11]));
        let nhwc = conv_transpose(SpatialLayout::Nhwc);
        let y = infer_conv_transpose(&nhwc, &[1, 3, 4, 4], &[6, 3, 2, 2], None);
        assert_eq!(y, Ok(vec![1, 6, 11, 6]));
        assert_eq!(conv_transpose_len(1, 1, 1, 1, [0, 0], 0), Ok(1));
    }

    #[test]
    fn conv_transpose_rejects_what_does_not_fit() {
        let c = conv_transpose(SpatialLayout::Nchw);
        assert!(infer_conv_transpose(&c, &[1, 4, 3, 4], &[6, 4, 3, 2], None).is_err());
        assert!(infer_conv_transpose(&c, &[1, 4, 3, 4], &[6, 2, 3, 2], Some(&[2])).is_err());
        let err = conv_transpose_len(1, 1, 1, 1, [1, 1], 0).unwrap_err();
        assert!(err.contains("crop"), "{err}");
        assert!(conv_transpose_len(0, 3, 1, 1, [0, 0], 0).is_err());
        assert!(conv_transpose_len(3, 3, 0, 1, [0, 0], 0).is_err());
        assert!(conv_transpose_len(usize::MAX, 3, 2, 1, [0, 0], 0).is_err());
    }

    #[test]
    fn fully_connected_w8_checks_the_scales() {
        assert_eq!(
            infer_fully_connected_w8(&[4, 8], &[3, 8], &[3], Some(&[3])),
            Ok(vec![4, 3])
        );
        let err = infer_fully_connected_w8(&[4, 8], &[3, 8], &[8], None).unwrap_err();
        assert!(err.contains("scales"), "{err}");
        assert!(infer_fully_connected_w8(&[4, 8], &[3, 7], &[3], None).is_err());
        let ok = [DType::F32, DType::I8, DType::F32];
        assert_eq!(infer_fully_connected_w8_dtype(&ok), Ok(DType::F32));
        assert!(infer_fully_connected_w8_dtype(&[DType::F32, DType::F32, DType::F32]).is_err());
    }

    #[test]
    fn ops_along_an_axis_check_it() {
        assert_eq!(infer_along_axis(&[2, 5], 1), Ok(vec![2, 5]));
        assert!(infer_along_axis(&[2, 5], 2).is_err());
        assert_eq!(infer_arg_reduce(&[2, 5, 3], 1, true), Ok(vec![2, 1, 3]));
        assert_eq!(infer_arg_reduce(&[2, 5, 3], 1, false), Ok(vec![2, 3]));
        assert!(infer_arg_reduce(&[2, 5, 3], 3, false).is_err());
        let err = infer_arg_reduce(&[2, 0], 1, false).unwrap_err();
        assert!(err.contains("empty"), "{err}");
        assert_eq!(infer_arg_reduce_dtype(&[DType::I32]), Ok(DType::I64));
        assert!(infer_arg_reduce_dtype(&[DType::Bool]).is_err());
    }

    #[test]
    fn reduce_drops_or_keeps_the_axes() {
        assert_eq!(infer_reduce(&[2, 3, 4, 5], &[1, 3], false), Ok(vec![2, 4]));
        assert_eq!(
            infer_reduce(&[2, 3, 4, 5], &[1, 3], true),
            Ok(vec![2, 1, 4, 1])
        );
        assert_eq!(infer_reduce(&[2, 3], &[0, 1], false), Ok(vec![]));
        assert!(infer_reduce(&[2, 3], &[1, 0], false).is_err());
        assert!(infer_reduce(&[2, 3], &[1, 1], false).is_err());
        assert!(infer_reduce(&[2, 3], &[2], true).is_err());
    }

    #[test]
    fn batch_norm_checks_its_parameters() {
        let x: &[usize] = &[2, 3, 4];
        let c: &[usize] = &[3];
        assert_eq!(infer_batch_norm(&[x, c, c, c, c]), Ok(vec![2, 3, 4]));
        let err = infer_batch_norm(&[x, c, c, &[4], c]).unwrap_err();
        assert!(err.contains("mean"), "{err}");
        assert!(infer_batch_norm(&[&[3], c, c, c, c]).is_err());
    }
}
