//! 2-D convolution over NHWC activations, with stride, dilation, explicit padding and groups
//! (groups == input channels == output channels is a depthwise convolution).

pub use crate::schema::Conv2dParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::shape::{dims_fit, dot, require, sum3, validate_by_check, Checked};
use crate::ops::{In, Out};
use crate::single_threaded_kernel;
use crate::workspace::Workspace;

validate_by_check! {
    /// Checks the shapes: `x` `[N, H, W, IC]`, `w` `[OC, KH, KW, IC / groups]`, `b` `[OC]` if present,
    /// `y` `[N, OH, OW, OC]` with `OH = (H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h + 1`
    /// (likewise OW), every stride, dilation and `groups` non-zero.
    ///
    /// Also checks that `groups` divides IC and OC, that the kernel is at least 1x1, and that the dilated kernel
    /// fits in the padded input. A window may lie entirely in the padding (it then sees zeros).
    (p: &Conv2dParams, x: &[usize], w: &[usize], b: Option<&[usize]>, y: &[usize])
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(
    p: &Conv2dParams,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    y: &[usize],
) -> Checked {
    dims_fit(x)?;
    dims_fit(w)?;
    dims_fit(y)?;
    require(x.len() == 4, "conv input is not [N, H, W, IC]")?;
    require(
        w.len() == 4,
        "conv weights are not [OC, KH, KW, IC / groups]",
    )?;
    require(y.len() == 4, "conv output is not [N, OH, OW, OC]")?;
    require(p.stride_h > 0 && p.stride_w > 0, "conv stride is zero")?;
    require(
        p.dilation_h > 0 && p.dilation_w > 0,
        "conv dilation is zero",
    )?;
    require(p.groups > 0, "conv groups is zero")?;
    let groups = usize::from(p.groups);
    let (in_channels, out_channels) = (x[3], w[0]);
    require(
        in_channels % groups == 0,
        "conv input channels are not a multiple of groups",
    )?;
    require(
        out_channels % groups == 0,
        "conv output channels are not a multiple of groups",
    )?;
    require(
        w[3] == in_channels / groups,
        "conv weights' last dim is not input channels / groups",
    )?;
    require(w[1] > 0 && w[2] > 0, "conv kernel is empty (KH or KW is 0)")?;
    if let Some(b) = b {
        require(
            b.len() == 1 && b[0] == out_channels,
            "conv bias is not [OC]",
        )?;
    }
    let out_h = output_len(
        x[1],
        w[1],
        p.stride_h,
        p.dilation_h,
        p.pad_top,
        p.pad_bottom,
    )?;
    let out_w = output_len(
        x[2],
        w[2],
        p.stride_w,
        p.dilation_w,
        p.pad_left,
        p.pad_right,
    )?;
    require(y[0] == x[0], "conv output batch differs from input batch")?;
    require(
        y[3] == out_channels,
        "conv output channels differ from weights' OC",
    )?;
    require(
        y[1] == out_h && y[2] == out_w,
        "conv output H or W does not follow from kernel, stride, dilation and padding",
    )
}

/// Output length along one spatial axis: `(size + before + after - dilation * (k - 1) - 1) / stride + 1`,
/// or an error when the dilated kernel does not fit the padded input. Needs `k, stride, dilation > 0`.
fn output_len(
    size: usize,
    k: usize,
    stride: u16,
    dilation: u16,
    before: u16,
    after: u16,
) -> Checked<usize> {
    let span = (k - 1)
        .checked_mul(usize::from(dilation))
        .and_then(|s| s.checked_add(1))
        .ok_or("conv dilated kernel size overflows usize")?;
    let padded = sum3(size, before.into(), after.into())?;
    require(
        padded >= span,
        "conv dilated kernel is larger than the padded input",
    )?;
    Ok((padded - span) / usize::from(stride) + 1)
}

/// The sizes of a 2-D convolution's tensors (NHWC `x` and `y`, OHWI `w`, as validated) and its window,
/// as `usize`: what a convolution loop nest reads first (the int8 reference's, and ember-cortex-m's
/// kernels).
#[derive(Clone, Copy, Debug)]
pub struct ConvGeometry {
    /// Batch (`N`).
    pub batch: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Input channels.
    pub in_c: usize,
    /// Output channels (`OC`).
    pub out_c: usize,
    /// Kernel height.
    pub k_h: usize,
    /// Kernel width.
    pub k_w: usize,
    /// Input channels per group (the weights' last dim).
    pub group_in_c: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Groups.
    pub groups: usize,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Vertical dilation.
    pub dil_h: usize,
    /// Horizontal dilation.
    pub dil_w: usize,
    /// Rows of padding above.
    pub pad_top: usize,
    /// Columns of padding on the left.
    pub pad_left: usize,
}

/// The parameters a convolution's loop nest reads besides the dims: strides, dilations, top and left
/// padding, and groups.
pub trait ConvWindow {
    /// The geometry of a convolution with these parameters over tensors of dims `x`, `w` and `y`
    /// (4-D, as validated).
    fn geometry(&self, x: &[usize], w: &[usize], y: &[usize]) -> ConvGeometry;
}

/// [`ConvWindow`] for parameter structs with the convolution's field names.
macro_rules! conv_window {
    ($($params:ty),*) => {$(
        impl ConvWindow for $params {
            #[inline(always)]
            fn geometry(&self, x: &[usize], w: &[usize], y: &[usize]) -> ConvGeometry {
                ConvGeometry {
                    batch: x[0],
                    in_h: x[1],
                    in_w: x[2],
                    in_c: x[3],
                    out_c: w[0],
                    k_h: w[1],
                    k_w: w[2],
                    group_in_c: w[3],
                    out_h: y[1],
                    out_w: y[2],
                    groups: usize::from(self.groups),
                    stride_h: usize::from(self.stride_h),
                    stride_w: usize::from(self.stride_w),
                    dil_h: usize::from(self.dilation_h),
                    dil_w: usize::from(self.dilation_w),
                    pad_top: usize::from(self.pad_top),
                    pad_left: usize::from(self.pad_left),
                }
            }
        }
    )*};
}

conv_window!(Conv2dParams, crate::schema::QuantConv2dParams);

impl ConvGeometry {
    /// The input row that kernel row `ky` of output row `oy` reads, or `None` in the padding.
    #[inline(always)]
    pub fn input_y(&self, oy: usize, ky: usize) -> Option<usize> {
        // A row above the input wraps around to far past its last row.
        let iy = (oy * self.stride_h + ky * self.dil_h).wrapping_sub(self.pad_top);
        (iy < self.in_h).then_some(iy)
    }

    /// The input column that kernel column `kx` of output column `ox` reads, or `None` in the padding.
    #[inline(always)]
    pub fn input_x(&self, ox: usize, kx: usize) -> Option<usize> {
        let ix = (ox * self.stride_w + kx * self.dil_w).wrapping_sub(self.pad_left);
        (ix < self.in_w).then_some(ix)
    }

    /// Offset in `x` of channel 0 of input pixel `(n, iy, ix)`.
    #[inline(always)]
    pub fn pixel(&self, n: usize, iy: usize, ix: usize) -> usize {
        ((n * self.in_h + iy) * self.in_w + ix) * self.in_c
    }
}

/// `y = act(conv(x, w) + b)`.
///
/// For each output pixel: start from the bias, then for each kernel tap that lands inside the input, add
/// for each output channel the dot product of the input pixel's channels of its group with the weight row
/// `w[oc, ky, kx, ..]` (both contiguous).
pub fn conv2d(p: &Conv2dParams, x: In<'_>, w: In<'_>, b: Option<&[f32]>, y: Out<'_>) {
    let (batch, in_h, in_w, in_c) = (x.dims[0], x.dims[1], x.dims[2], x.dims[3]);
    let (out_c, k_h, k_w, group_in_c) = (w.dims[0], w.dims[1], w.dims[2], w.dims[3]);
    let (out_h, out_w) = (y.dims[1], y.dims[2]);
    if y.data.is_empty() {
        return;
    }
    let groups = usize::from(p.groups);
    let group_out_c = out_c / groups;
    let (stride_h, stride_w) = (usize::from(p.stride_h), usize::from(p.stride_w));
    let (dil_h, dil_w) = (usize::from(p.dilation_h), usize::from(p.dilation_w));
    let (pad_top, pad_left) = (usize::from(p.pad_top), usize::from(p.pad_left));

    let mut pixels = y.data.chunks_exact_mut(out_c);
    for n in 0..batch {
        for oy in 0..out_h {
            for ox in 0..out_w {
                let Some(out) = pixels.next() else { return };
                match b {
                    Some(b) => out.copy_from_slice(b),
                    None => out.fill(0.0),
                }
                for ky in 0..k_h {
                    // Row in padded coordinates, then in the input; taps in the padding add nothing.
                    let Some(iy) = (oy * stride_h + ky * dil_h).checked_sub(pad_top) else {
                        continue;
                    };
                    if iy >= in_h {
                        continue;
                    }
                    for kx in 0..k_w {
                        let Some(ix) = (ox * stride_w + kx * dil_w).checked_sub(pad_left) else {
                            continue;
                        };
                        if ix >= in_w {
                            continue;
                        }
                        let pixel = &x.data[((n * in_h + iy) * in_w + ix) * in_c..][..in_c];
                        for g in 0..groups {
                            let x_group = &pixel[g * group_in_c..][..group_in_c];
                            let first_oc = g * group_out_c;
                            for (j, acc) in out[first_oc..][..group_out_c].iter_mut().enumerate() {
                                let w_row = ((first_oc + j) * k_h + ky) * k_w + kx;
                                *acc += dot(x_group, &w.data[w_row * group_in_c..][..group_in_c]);
                            }
                        }
                    }
                }
                for v in out.iter_mut() {
                    *v = p.act.apply(*v);
                }
            }
        }
    }
}

/// Signature of a 2-D convolution kernel (`x, w, bias, y`, and its [`Workspace`]: `None` means no
/// scratch and one thread).
pub type Conv2dFn =
    fn(&Conv2dParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>, Option<&mut Workspace<'_>>);

single_threaded_kernel! {
    /// [`conv2d`] in the table's signature: it needs no scratch and runs on one thread.
    fn reference = conv2d(p: &Conv2dParams, x: In<'_>, w: In<'_>, b: Option<&[f32]>, y: Out<'_>)
}

op_entry! {
    /// The [`Kernels::conv2d`](crate::Kernels::conv2d) entry, which runs
    /// [`OpKind::Conv2d`](crate::OpKind::Conv2d).
    Conv2d: Conv2dFn = reference, Conv2dParams, F32;
    validate |p, o| check(p, o.dims(0), o.dims(1), o.opt(2), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.opt(2)?, out(a.y)?, a.ws);
}
