//! int8 2-D convolution over NHWC activations (TFLM's `ConvPerChannel` and `DepthwiseConvPerChannel`):
//! stride, dilation, explicit padding and groups (groups == input channels is a depthwise convolution,
//! possibly with a channel multiplier), per-channel requantization.

pub use crate::schema::QuantConv2dParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::nn::conv as float_conv;
use crate::ops::nn::conv::{ConvGeometry, ConvWindow};
use crate::ops::quant::requant::{
    check_per_channel_dims, check_requant_input, HasOutputStage, OutputStage,
};
use crate::ops::shape::{validate_by_check, Checked};
use crate::ops::{In, Out};
use crate::schema::{Activation, Conv2dParams};
use crate::single_threaded_kernel;
use crate::workspace::Workspace;

impl QuantConv2dParams {
    /// The shape parameters as the float convolution's (whose shape rules this op shares).
    fn float_params(&self) -> Conv2dParams {
        Conv2dParams {
            stride_h: self.stride_h,
            stride_w: self.stride_w,
            dilation_h: self.dilation_h,
            dilation_w: self.dilation_w,
            pad_top: self.pad_top,
            pad_left: self.pad_left,
            pad_bottom: self.pad_bottom,
            pad_right: self.pad_right,
            groups: self.groups,
            act: Activation::None,
        }
    }
}

/// What an int8 convolution's loop nest reads besides the elements of its tensors, derived once from
/// the parameters, the dims, the bias and the requantization: by the reference ([`conv2d_with`]) and by
/// the targets' kernels (ember-cortex-m's).
#[derive(Clone, Copy, Debug)]
pub struct QuantConvArgs<'a> {
    /// The sizes and the window.
    pub g: ConvGeometry,
    /// Zero point of the input (the value of padding).
    pub x_zero_point: i8,
    /// `-x_zero_point`, added to every input value.
    pub x_offset: i32,
    /// Bias and requantization of each output channel.
    pub stage: OutputStage<'a>,
}

impl QuantConv2dParams {
    /// The loop nest's arguments over tensors of dims `x`, `w` and `y` (validated), with `bias` and
    /// `requant`.
    #[inline(always)]
    pub fn args<'a>(
        &self,
        [x, w, y]: [&[usize]; 3],
        bias: Option<&'a [i32]>,
        requant: &'a [i32],
    ) -> QuantConvArgs<'a> {
        QuantConvArgs {
            g: self.geometry(x, w, y),
            x_zero_point: self.x_zero_point,
            x_offset: -i32::from(self.x_zero_point),
            stage: self.output_stage(bias, requant),
        }
    }
}

validate_by_check! {
    /// Checks the shapes: the float convolution's rules (see [`nn::conv::validate`](float_conv::validate):
    /// `x` `[N, H, W, IC]`, `w` `[OC, KH, KW, IC / groups]`, `b` `[OC]` if present, `y` `[N, OH, OW, OC]`,
    /// strides, dilations and groups non-zero), and `requant` `[OC, 2]` or `[1, 2]`.
    ///
    /// The requantization values are checked by [`requant::check_per_channel`](super::requant::check_per_channel).
    (p: &QuantConv2dParams, x: &[usize], w: &[usize], b: Option<&[usize]>,
        requant: &[usize], y: &[usize])
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(
    p: &QuantConv2dParams,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    requant: &[usize],
    y: &[usize],
) -> Checked {
    float_conv::check(&p.float_params(), x, w, b, y)?;
    check_per_channel_dims(requant, w[0])
}

/// `y = clamp(requant(conv(x - x_zero_point, w) + b) + y_zero_point, act_min, act_max)`.
///
/// For each output pixel and channel, as TFLM: accumulate in int32 `w * (x - x_zero_point)` over the kernel
/// taps that land inside the input (padding holds the zero point, so adds nothing) and the input channels
/// of the channel's group, add the bias, scale with the channel's `(multiplier, shift)`, add the output
/// zero point and clamp. The accumulation wraps on overflow (which needs over 66,000 taps of extreme
/// values; TFLM's is undefined there).
pub fn conv2d(
    p: &QuantConv2dParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
) {
    let args = p.args([x.dims, w.dims, y.dims], b, requant);
    conv2d_with::<ScalarDot>(&args, x.data, w.data, y.data)
}

/// [`conv2d`]'s loop nest over its arguments ([`QuantConv2dParams::args`]) and the elements of `x`, `w`
/// and `y`, with the inner product `D`: one `D::dot` per output channel and kernel tap that lands
/// inside the input, over the channels of the output channel's group. A target runs it with its own
/// inner product (ember-cortex-m's SMLAD one) and gets the reference's results.
#[inline(always)]
pub fn conv2d_with<D: DotOffset>(a: &QuantConvArgs<'_>, x: &[i8], w: &[i8], y: &mut [i8]) {
    if y.is_empty() {
        return;
    }
    let (g, x_offset) = (&a.g, a.x_offset);
    let group_out_c = g.out_c / g.groups;

    let mut pixels = y.chunks_exact_mut(g.out_c);
    for n in 0..g.batch {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                let Some(out) = pixels.next() else { return };
                for (oc, out) in out.iter_mut().enumerate() {
                    let group_start = (oc / group_out_c) * g.group_in_c;
                    let mut acc: i32 = 0;
                    for ky in 0..g.k_h {
                        // Taps in the padding add nothing.
                        let Some(iy) = g.input_y(oy, ky) else {
                            continue;
                        };
                        for kx in 0..g.k_w {
                            let Some(ix) = g.input_x(ox, kx) else {
                                continue;
                            };
                            // The pixel's group channels onward: `dot_offset` stops at the
                            // `group_in_c` weights.
                            let xs = x.get(g.pixel(n, iy, ix) + group_start..).unwrap_or(&[]);
                            let ws = row(w, (oc * g.k_h + ky) * g.k_w + kx, g.group_in_c);
                            acc = acc.wrapping_add(D::dot(xs, ws, x_offset));
                        }
                    }
                    *out = a.stage.finish(acc, oc);
                }
            }
        }
    }
}

/// Row `i` of `len` values of `data` (empty if out of bounds, which validated shapes rule out): the
/// kernels slice with it so that the binary has no panic path for it.
#[inline(always)]
pub(crate) fn row<T>(data: &[T], i: usize, len: usize) -> &[T] {
    let start = i.wrapping_mul(len);
    data.get(start..start.wrapping_add(len)).unwrap_or(&[])
}

/// The inner product of the int8 convolution and fully connected loop nests ([`conv2d_with`],
/// [`fully_connected_with`](super::fully_connected::fully_connected_with)): `sum(w[i] * (x[i] +
/// x_offset))` over the common length of `xs` and `ws`, in int32, wrapping. Every implementation gives
/// the same sums; a target's is faster on its hardware.
pub trait DotOffset {
    /// Whether [`DotOffset::dot2`] beats two [`DotOffset::dot`]s: the fully connected loop then takes
    /// its outputs two at a time.
    const PAIRS: bool = false;

    /// `sum(ws[i] * (xs[i] + x_offset))`.
    fn dot(xs: &[i8], ws: &[i8], x_offset: i32) -> i32;

    /// The dots of one `xs` with two weight runs (two outputs).
    #[inline(always)]
    fn dot2(xs: &[i8], wa: &[i8], wb: &[i8], x_offset: i32) -> (i32, i32) {
        (Self::dot(xs, wa, x_offset), Self::dot(xs, wb, x_offset))
    }
}

/// The reference inner product, one product at a time ([`dot_offset`]).
pub struct ScalarDot;

impl DotOffset for ScalarDot {
    #[inline(always)]
    fn dot(xs: &[i8], ws: &[i8], x_offset: i32) -> i32 {
        dot_offset(xs, ws, x_offset)
    }
}

/// `sum(w[i] * (x[i] + x_offset))` in int32, wrapping. Each term fits easily (`|w| <= 128`,
/// `|x + x_offset| <= 255`).
#[inline(always)]
pub(crate) fn dot_offset(xs: &[i8], ws: &[i8], x_offset: i32) -> i32 {
    xs.iter().zip(ws).fold(0i32, |acc, (&xv, &wv)| {
        acc.wrapping_add(i32::from(wv) * (i32::from(xv) + x_offset))
    })
}

/// Signature of an int8 convolution (`x, w, bias, requant, y`, and its [`Workspace`]).
pub type QuantConv2dFn = fn(
    &QuantConv2dParams,
    In<'_, i8>,
    In<'_, i8>,
    Option<&[i32]>,
    &[i32],
    Out<'_, i8>,
    Option<&mut Workspace<'_>>,
);

single_threaded_kernel! {
    /// [`conv2d`] in the table's signature: it needs no scratch and runs on one thread.
    fn reference = conv2d(p: &QuantConv2dParams, x: In<'_, i8>, w: In<'_, i8>,
        b: Option<&[i32]>, requant: &[i32], y: Out<'_, i8>)
}

op_entry! {
    /// The [`Kernels::quant_conv2d`](crate::Kernels::quant_conv2d) entry, which runs
    /// [`OpKind::QuantConv2d`](crate::OpKind::QuantConv2d).
    QuantConv2d: QuantConv2dFn = reference, QuantConv2dParams, Int8[I8, I8, I32, I32] -> I8;
    validate |p, o| {
        check(p, o.dims(0), o.dims(1), o.opt(3), o.dims(2), o.out_dims())?;
        check_requant_input(o)
    };
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.opt(3)?, a.x::<i32>(2)?.data, out(a.y)?, a.ws);
}
