//! The IR's 2-D transposed convolution ([`Op::ConvTranspose2d`](super::Op::ConvTranspose2d)) and its
//! shape inference.
//!
//! Its weights are stored like a [`Conv2d`](super::op::nn::Conv2d)'s in the same layout (OIHW for `Nchw`,
//! OHWI for `Nhwc`), with `O` the output channels and `I` the input channels of one group: the importer
//! moves ONNX's `[C, M / group, KH, KW]` there at conversion time, so the layout pass treats both
//! convolutions alike and the runtime kernel reads the weights of one output channel contiguously.

use ember_core::ops::math::activation::Activation;

use super::op::nn::conv_output;
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
    conv_output(c.layout, c.groups, x, w, b, |axis, len, kernel| {
        let pads = [c.pads[axis], c.pads[axis + 2]];
        let (stride, dilation) = (c.strides[axis], c.dilations[axis]);
        output_len(len, kernel, stride, dilation, pads, c.output_padding[axis])
    })
}
