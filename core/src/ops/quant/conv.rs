//! int8 2-D convolution over NHWC activations (TFLM's `ConvPerChannel` and `DepthwiseConvPerChannel`):
//! stride, dilation, explicit padding and groups (groups == input channels is a depthwise convolution,
//! possibly with a channel multiplier), per-channel requantization.

pub use crate::schema::QuantConv2dParams;

use crate::ops::entry::{out, DTypes, Int8DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::nn::conv as float_conv;
use crate::ops::quant::requant::{check_per_channel_dims, check_requant_input, requantize_acc};
use crate::ops::shape::{shape_error, Checked};
use crate::ops::{In, Out};
use crate::schema::{Activation, Conv2dParams, DType};
use crate::workspace::Workspace;
use crate::Error;

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

/// Checks the shapes: the float convolution's rules (see [`nn::conv::validate`](float_conv::validate):
/// `x` `[N, H, W, IC]`, `w` `[OC, KH, KW, IC / groups]`, `b` `[OC]` if present, `y` `[N, OH, OW, OC]`,
/// strides, dilations and groups non-zero), and `requant` `[OC, 2]` or `[1, 2]`.
///
/// The requantization values are checked by [`requant::check_per_channel`](super::requant::check_per_channel).
pub fn validate(
    p: &QuantConv2dParams,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    requant: &[usize],
    y: &[usize],
) -> Result<(), Error> {
    check(p, x, w, b, requant, y).map_err(shape_error)
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
    conv2d_with::<ScalarDot>(p, x, w, b, requant, y)
}

/// [`conv2d`]'s loop nest with the inner product `D`: one `D::dot` per output channel and kernel tap
/// that lands inside the input, over the channels of the output channel's group. A target runs it
/// with its own inner product (ember-cortex-m's SMLAD one) and gets the reference's results.
#[inline(always)]
pub fn conv2d_with<D: DotOffset>(
    p: &QuantConv2dParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
) {
    let (batch, in_h, in_w, in_c) = (x.dims[0], x.dims[1], x.dims[2], x.dims[3]);
    let (out_c, k_h, k_w, group_in_c) = (w.dims[0], w.dims[1], w.dims[2], w.dims[3]);
    let (out_h, out_w) = (y.dims[1], y.dims[2]);
    if y.data.is_empty() {
        return;
    }
    let group_out_c = out_c / usize::from(p.groups);
    let (stride_h, stride_w) = (usize::from(p.stride_h), usize::from(p.stride_w));
    let (dil_h, dil_w) = (usize::from(p.dilation_h), usize::from(p.dilation_w));
    let (pad_top, pad_left) = (usize::from(p.pad_top), usize::from(p.pad_left));
    let x_offset = -i32::from(p.x_zero_point);

    let mut pixels = y.data.chunks_exact_mut(out_c);
    for n in 0..batch {
        for oy in 0..out_h {
            for ox in 0..out_w {
                let Some(out) = pixels.next() else { return };
                for (oc, out) in out.iter_mut().enumerate() {
                    let group_start = (oc / group_out_c) * group_in_c;
                    let mut acc: i32 = 0;
                    for ky in 0..k_h {
                        // Row in padded coordinates, then in the input; taps in the padding add nothing.
                        let Some(iy) = (oy * stride_h + ky * dil_h).checked_sub(pad_top) else {
                            continue;
                        };
                        if iy >= in_h {
                            continue;
                        }
                        for kx in 0..k_w {
                            let Some(ix) = (ox * stride_w + kx * dil_w).checked_sub(pad_left)
                            else {
                                continue;
                            };
                            if ix >= in_w {
                                continue;
                            }
                            let pixel = ((n * in_h + iy) * in_w + ix) * in_c;
                            // The pixel's group channels onward: `dot_offset` stops at the
                            // `group_in_c` weights.
                            let xs = x.data.get(pixel + group_start..).unwrap_or(&[]);
                            let ws = row(w.data, (oc * k_h + ky) * k_w + kx, group_in_c);
                            acc = acc.wrapping_add(D::dot(xs, ws, x_offset));
                        }
                    }
                    if let Some(&b) = b.and_then(|b| b.get(oc)) {
                        acc = acc.wrapping_add(b);
                    }
                    *out = requantize_acc(
                        acc,
                        requant,
                        oc,
                        p.rounding,
                        p.y_zero_point,
                        p.act_min,
                        p.act_max,
                    );
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

/// [`conv2d`] in the table's signature: it needs no scratch and runs on one thread.
fn reference(
    p: &QuantConv2dParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
    _: Option<&mut Workspace<'_>>,
) {
    conv2d(p, x, w, b, requant, y)
}

/// The [`Kernels::quant_conv2d`](crate::Kernels::quant_conv2d) entry, which runs
/// [`OpKind::QuantConv2d`](crate::OpKind::QuantConv2d).
pub struct QuantConv2d;

impl KernelEntry for QuantConv2d {
    type Kernel = QuantConv2dFn;
    const REFERENCE: QuantConv2dFn = reference;
    const STUB: QuantConv2dFn = |_, _, _, _, _, _, _| {};
}

impl OpEntry for QuantConv2d {
    type Params = QuantConv2dParams;
    const DTYPES: DTypes = DTypes::Int8(&Int8DTypes {
        inputs: &[DType::I8, DType::I8, DType::I32, DType::I32],
        output: DType::I8,
    });

    fn validate(p: &QuantConv2dParams, o: &impl Operands) -> Checked {
        check(p, o.dims(0), o.dims(1), o.opt(3), o.dims(2), o.out_dims())?;
        check_requant_input(o)
    }

    #[inline(always)]
    fn run(kernel: QuantConv2dFn, p: &QuantConv2dParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        let bias = a.opt(3)?;
        let requant = a.x::<i32>(2)?.data;
        kernel(p, a.x(0)?, a.x(1)?, bias, requant, out(a.y)?, a.ws);
        Ok(())
    }
}
