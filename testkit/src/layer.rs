//! Layers with weights: convolutions, transposed convolutions and fully connected layers, f32 or int8,
//! as the suites and the targets' own comparisons hold their cases; their parameters; and the
//! convolution's output-length formula.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::conv::Conv2dParams;
use ember_core::ops::nn::conv_transpose::ConvTranspose2dParams;
use ember_core::ops::quant::conv::QuantConv2dParams;
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::{In, Out};
use proptest::prelude::*;

use crate::shape::numel;

/// A layer's case: parameters `p`, the input `x`, the weights `w`, an optional bias `b`, the output's
/// dims, and `q`, what its quantization adds (an int8 layer's requantization; `()` for an f32 layer).
/// Convolutions hold NHWC dims and 4-d weights (the defaults); fully connected layers other dims.
#[derive(Clone, Debug)]
pub struct Layer<P, T, B, Q = (), D = [usize; 4], WD = [usize; 4]> {
    /// The op's parameters.
    pub p: P,
    /// Input dims.
    pub x_dims: D,
    /// Weight dims.
    pub w_dims: WD,
    /// Output dims.
    pub y_dims: D,
    /// Input values, row-major.
    pub x: Vec<T>,
    /// Weights, row-major.
    pub w: Vec<T>,
    /// Bias, one per output channel.
    pub b: Option<Vec<B>>,
    /// What the layer's quantization adds.
    pub q: Q,
}

impl<P, T: Copy, B, Q, D: AsRef<[usize]>, WD: AsRef<[usize]>> Layer<P, T, B, Q, D, WD> {
    /// The bias's dims, `[len]`, when there is a bias.
    pub fn b_dims(&self) -> Option<[usize; 1]> {
        self.b.as_ref().map(|b| [b.len()])
    }

    /// Runs `kernel` on the input, weights and bias into an output filled with `fill` (so that
    /// elements it skips show), and returns the output.
    pub fn run(
        &self,
        fill: T,
        kernel: impl FnOnce(In<'_, T>, In<'_, T>, Option<&[B]>, Out<'_, T>),
    ) -> Vec<T> {
        let mut y = vec![fill; numel(self.y_dims.as_ref())];
        kernel(
            In {
                data: &self.x,
                dims: self.x_dims.as_ref(),
            },
            In {
                data: &self.w,
                dims: self.w_dims.as_ref(),
            },
            self.b.as_deref(),
            Out {
                data: &mut y,
                dims: self.y_dims.as_ref(),
            },
        );
        y
    }
}

/// Output length of a convolution along one axis, by the textbook formula; `None` if the dilated kernel
/// does not fit the padded input.
pub fn conv_output_len(
    size: usize,
    k: usize,
    stride: u16,
    dilation: u16,
    pads: (u16, u16),
) -> Option<usize> {
    let padded = size + usize::from(pads.0) + usize::from(pads.1);
    let span = usize::from(dilation) * (k - 1) + 1;
    (padded >= span).then(|| (padded - span) / usize::from(stride) + 1)
}

/// A convolution window: kernel height and width 1 to `max_kernel`, strides 1 to 3 and dilations 1 to
/// 2, as `(kh, kw, sh, sw, dh, dw)`.
pub fn conv_window(max_kernel: usize) -> impl Strategy<Value = (usize, usize, u16, u16, u16, u16)> {
    (
        1..=max_kernel,
        1..=max_kernel,
        1u16..=3,
        1u16..=3,
        1u16..=2,
        1u16..=2,
    )
}

/// The smallest input length (at least 1) that a kernel of `k` taps dilated by `dilation` fits in,
/// with `pads` of padding around it.
pub fn fitting_len(k: usize, dilation: u16, pads: u16) -> usize {
    (usize::from(dilation) * (k - 1) + 1)
        .saturating_sub(pads.into())
        .max(1)
}

/// The struct literal of a convolution's parameters of type `$ty`: the geometry every kind shares, from
/// `(height, width)` strides and dilations, paddings `[top, left, bottom, right]` and groups, then the
/// fields of its own.
macro_rules! conv_params {
    (
        $ty:ident, $strides:expr, $dilations:expr, $pads:expr, $groups:expr,
        { $($field:ident: $value:expr),* $(,)? }
    ) => {{
        let [pad_top, pad_left, pad_bottom, pad_right] = $pads;
        $ty {
            stride_h: $strides.0,
            stride_w: $strides.1,
            dilation_h: $dilations.0,
            dilation_w: $dilations.1,
            pad_top,
            pad_left,
            pad_bottom,
            pad_right,
            groups: $groups,
            $($field: $value),*
        }
    }};
}

/// Convolution parameters: `(height, width)` strides and dilations, paddings `[top, left, bottom,
/// right]`.
pub fn conv2d_params(
    strides: (u16, u16),
    dilations: (u16, u16),
    pads: [u16; 4],
    groups: u16,
    act: Activation,
) -> Conv2dParams {
    conv_params!(Conv2dParams, strides, dilations, pads, groups, { act: act })
}

/// Transposed convolution parameters, as [`conv2d_params`] with the output paddings `(height, width)`.
pub fn conv_transpose2d_params(
    strides: (u16, u16),
    dilations: (u16, u16),
    pads: [u16; 4],
    output_pads: (u16, u16),
    groups: u16,
    act: Activation,
) -> ConvTranspose2dParams {
    conv_params!(ConvTranspose2dParams, strides, dilations, pads, groups, {
        output_pad_h: output_pads.0,
        output_pad_w: output_pads.1,
        act: act,
    })
}

/// An int8 convolution's geometry, as [`conv2d_params`], with zero points 0, no activation and double
/// rounding (set the others with struct update syntax).
pub fn quant_conv2d_params(
    strides: (u16, u16),
    dilations: (u16, u16),
    pads: [u16; 4],
    groups: u16,
) -> QuantConv2dParams {
    conv_params!(QuantConv2dParams, strides, dilations, pads, groups, {
        x_zero_point: 0,
        y_zero_point: 0,
        act_min: i8::MIN,
        act_max: i8::MAX,
        rounding: RequantRounding::Double,
    })
}
