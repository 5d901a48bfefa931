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

use crate::shape::{flat, numel};

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

    /// Calls a `validate` with the dims of the input, the weights, the bias (when there is one) and
    /// the output, and returns its verdict.
    pub fn validate_with<R>(
        &self,
        validate: impl FnOnce(&[usize], &[usize], Option<&[usize]>, &[usize]) -> R,
    ) -> R {
        let b_dims = self.b_dims();
        validate(
            self.x_dims.as_ref(),
            self.w_dims.as_ref(),
            b_dims.as_ref().map(|d| &d[..]),
            self.y_dims.as_ref(),
        )
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

impl<P, T: Copy, B: Copy> Layer<P, T, B> {
    /// A hand-written case of a layer without quantization: parameters, input, weights, bias and the
    /// output's dims. Panics unless the dims are 4-d.
    pub fn from_tensors(
        p: P,
        x: In<'_, T>,
        w: In<'_, T>,
        b: Option<&[B]>,
        y_dims: &[usize],
    ) -> Self {
        let four_d = |dims: &[usize]| -> [usize; 4] {
            dims.try_into()
                .unwrap_or_else(|_| panic!("a layer case takes 4-d dims, not {dims:?}"))
        };
        Layer {
            p,
            x_dims: four_d(x.dims),
            w_dims: four_d(w.dims),
            y_dims: four_d(y_dims),
            x: x.data.to_vec(),
            w: w.data.to_vec(),
            b: b.map(<[B]>::to_vec),
            q: (),
        }
    }
}

/// A bias drawn from `values` when `with` is set, else none.
pub fn maybe_bias<S>(with: bool, values: S) -> BoxedStrategy<Option<S::Value>>
where
    S: Strategy + 'static,
    S::Value: Clone,
{
    if with {
        values.prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    }
}

/// Visits the terms of a convolution by its definition. For each output `(b, oy, ox, o)` in
/// row-major order, and for each tap `(ky, kx, ci)` of its window whose input position lies inside the
/// input (the padding adds nothing), calls `term(y, x, w)` with the flat positions of the output, the
/// input value and the weight.
pub fn conv2d_terms(
    p: &impl ConvGeometry,
    x_dims: [usize; 4],
    w_dims: [usize; 4],
    y_dims: [usize; 4],
    mut term: impl FnMut(usize, usize, usize),
) {
    let ((sh, sw), (dh, dw), [pad_top, pad_left, _, _], groups) = p.geometry();
    let [n, h, w, _] = x_dims;
    let [oc, kh, kw, icg] = w_dims;
    let [_, oh, ow, _] = y_dims;
    let ocg = oc / usize::from(groups);
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for o in 0..oc {
                    let y = flat(&[b, oy, ox, o], &y_dims);
                    let group = o / ocg;
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = tap(oy, ky, sh, dh, pad_top);
                            let ix = tap(ox, kx, sw, dw, pad_left);
                            if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                                continue;
                            }
                            let (iy, ix) = (iy as usize, ix as usize);
                            for ci in 0..icg {
                                let x = flat(&[b, iy, ix, group * icg + ci], &x_dims);
                                term(y, x, flat(&[o, ky, kx, ci], &w_dims));
                            }
                        }
                    }
                }
            }
        }
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

/// The window geometry that every kind of convolution's parameters holds, read back in the form
/// [`conv2d_params`] takes it.
pub trait ConvGeometry {
    /// `(strides, dilations, pads, groups)`: `(height, width)` strides and dilations, paddings `[top,
    /// left, bottom, right]`.
    fn geometry(&self) -> ((u16, u16), (u16, u16), [u16; 4], u16);
}

macro_rules! conv_geometry {
    ($($ty:ident),*) => {$(
        impl ConvGeometry for $ty {
            fn geometry(&self) -> ((u16, u16), (u16, u16), [u16; 4], u16) {
                (
                    (self.stride_h, self.stride_w),
                    (self.dilation_h, self.dilation_w),
                    [self.pad_top, self.pad_left, self.pad_bottom, self.pad_right],
                    self.groups,
                )
            }
        }
    )*};
}

conv_geometry!(Conv2dParams, ConvTranspose2dParams, QuantConv2dParams);

/// Whether a (transposed) convolution's parameters and channels are usable by the definition: strides,
/// dilations and groups positive, and groups that divide the input channels `x_dims[3]` and output
/// channels `w_dims[0]`, with `w_dims[3]` input channels per group.
pub fn conv_groups_are_valid(
    p: &impl ConvGeometry,
    x_dims: [usize; 4],
    w_dims: [usize; 4],
) -> bool {
    let ((sh, sw), (dh, dw), _, groups) = p.geometry();
    let (ic, oc, icg, g) = (x_dims[3], w_dims[0], w_dims[3], usize::from(groups));
    let params_ok = sh > 0 && sw > 0 && dh > 0 && dw > 0 && g > 0;
    params_ok && ic % g == 0 && oc % g == 0 && icg * g == ic
}

/// Whether a convolution's geometry is well-formed by the definition: [`conv_groups_are_valid`], a
/// kernel of at least one tap, and `y_dims` the output shape the textbook formula gives.
pub fn conv2d_geometry_is_valid(
    p: &impl ConvGeometry,
    x_dims: [usize; 4],
    w_dims: [usize; 4],
    y_dims: [usize; 4],
) -> bool {
    let ((sh, sw), (dh, dw), [top, left, bottom, right], _) = p.geometry();
    let ([n, h, w, _], [oc, kh, kw, _]) = (x_dims, w_dims);
    if !conv_groups_are_valid(p, x_dims, w_dims) || kh == 0 || kw == 0 {
        return false;
    }
    let oh = conv_output_len(h, kh, sh, dh, (top, bottom));
    let ow = conv_output_len(w, kw, sw, dw, (left, right));
    matches!((oh, ow), (Some(oh), Some(ow)) if y_dims == [n, oh, ow, oc])
}

/// The mistakes an odd layer case may make: an output axis one too long (one case in ten), and one
/// input channel too many (one in ten).
pub fn odd_layer_mistakes() -> impl Strategy<Value = (Option<usize>, bool)> {
    (
        prop::option::weighted(0.1, 0usize..4),
        prop::bool::weighted(0.1),
    )
}

/// The NHWC dims of a grouped layer, from `(n, h, w, input channels per group, output channels per
/// group)`, the kernel's and the output's `(height, width)` and the groups (at least 1): input `[n, h, w,
/// g * icg]`, weights `[g * ocg, kh, kw, icg]`, output `[n, oh, ow, g * ocg]`; then an odd case's
/// mistakes (see [`odd_layer_mistakes`]; `(None, false)` for none): one more along output axis
/// `off_by_one`, one more input channel with `ic_off`.
pub fn grouped_dims(
    (n, h, w, icg, ocg): (usize, usize, usize, usize, usize),
    (kh, kw): (usize, usize),
    (oh, ow): (usize, usize),
    groups: u16,
    (off_by_one, ic_off): (Option<usize>, bool),
) -> [[usize; 4]; 3] {
    let g = usize::from(groups).max(1);
    let x_dims = [n, h, w, g * icg + usize::from(ic_off)];
    let w_dims = [g * ocg, kh, kw, icg];
    let mut y_dims = [n, oh, ow, g * ocg];
    if let Some(axis) = off_by_one {
        y_dims[axis] += 1;
    }
    [x_dims, w_dims, y_dims]
}

/// The position along one axis that tap `k` of the window at `o` reads: `o * stride + k * dilation -
/// pad`, negative in the leading padding. (A transposed convolution's input `o` writes there.)
pub fn tap(o: usize, k: usize, stride: u16, dilation: u16, pad: u16) -> i64 {
    (o * usize::from(stride) + k * usize::from(dilation)) as i64 - i64::from(pad)
}
