//! The IR's 2-D transposed convolution ([`Op::ConvTranspose2d`](super::Op::ConvTranspose2d)) and its
//! shape inference.
//!
//! Its weights are stored like a [`Conv2d`](super::op::nn::Conv2d)'s in the same layout (OIHW for `Nchw`,
//! OHWI for `Nhwc`), with `O` the output channels and `I` the input channels of one group: the importer
//! moves ONNX's `[C, M / group, KH, KW]` there at conversion time, so the layout pass treats both
//! convolutions alike and the runtime kernel reads the weights of one output channel contiguously.

use ember_core::ops::math::activation::Activation;

use super::SpatialLayout;

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

/// Output length along one axis:
/// `stride * (size - 1) + output_padding + dilation * (kernel - 1) + 1 - pad_begin - pad_end`.
pub fn output_len(
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

/// The output dims of `c` for input `x`, weights `w` and bias `b`.
pub fn infer(
    c: &ConvTranspose2d,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    let (n, ch, h, wd) = match (x, c.layout) {
        ([n, ch, h, wd], SpatialLayout::Nchw) => (*n, *ch, *h, *wd),
        ([n, h, wd, ch], SpatialLayout::Nhwc) => (*n, *ch, *h, *wd),
        _ => return Err(format!("input {x:?} must have rank 4")),
    };
    let (m, wc, kh, kw) = match (w, c.layout) {
        ([m, wc, kh, kw], SpatialLayout::Nchw) => (*m, *wc, *kh, *kw),
        ([m, kh, kw, wc], SpatialLayout::Nhwc) => (*m, *wc, *kh, *kw),
        _ => return Err(format!("weights {w:?} must have rank 4")),
    };
    let g = c.groups;
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
    let [pt, pl, pb, pr] = c.pads;
    let oh = output_len(
        h,
        kh,
        c.strides[0],
        c.dilations[0],
        [pt, pb],
        c.output_padding[0],
    )?;
    let ow = output_len(
        wd,
        kw,
        c.strides[1],
        c.dilations[1],
        [pl, pr],
        c.output_padding[1],
    )?;
    Ok(match c.layout {
        SpatialLayout::Nchw => vec![n, m, oh, ow],
        SpatialLayout::Nhwc => vec![n, oh, ow, m],
    })
}
