//! 2-D convolution over NHWC activations, with stride, dilation, explicit padding and groups
//! (groups == input channels == output channels is a depthwise convolution).

pub use crate::schema::Conv2dParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::shape::{dims_fit, dot, require, shape_error, sum3, Checked};
use crate::ops::{In, Out};
use crate::workspace::Workspace;
use crate::Error;

/// Checks the shapes: `x` `[N, H, W, IC]`, `w` `[OC, KH, KW, IC / groups]`, `b` `[OC]` if present,
/// `y` `[N, OH, OW, OC]` with `OH = (H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h + 1`
/// (likewise OW), every stride, dilation and `groups` non-zero.
///
/// Also checks that `groups` divides IC and OC, that the kernel is at least 1x1, and that the dilated kernel
/// fits in the padded input. A window may lie entirely in the padding (it then sees zeros).
pub fn validate(
    p: &Conv2dParams,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    y: &[usize],
) -> Result<(), Error> {
    check(p, x, w, b, y).map_err(shape_error)
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

/// [`conv2d`] in the table's signature: it needs no scratch and runs on one thread.
fn reference(
    p: &Conv2dParams,
    x: In<'_>,
    w: In<'_>,
    b: Option<&[f32]>,
    y: Out<'_>,
    _: Option<&mut Workspace<'_>>,
) {
    conv2d(p, x, w, b, y)
}

op_entry! {
    /// The [`Kernels::conv2d`](crate::Kernels::conv2d) entry, which runs
    /// [`OpKind::Conv2d`](crate::OpKind::Conv2d).
    Conv2d: Conv2dFn = reference, Conv2dParams, F32;
    validate |p, o| check(p, o.dims(0), o.dims(1), o.opt(2), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.opt(2)?, out(a.y)?, a.ws);
}
