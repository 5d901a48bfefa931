//! 2-D transposed convolution (ONNX `ConvTranspose`, "deconvolution") over NHWC activations, with
//! stride, dilation, explicit padding (cropped from the full output), output padding (added at the end)
//! and groups.
//!
//! Each input pixel `x[n, iy, ix, ..]` scatters `x * w` onto the output pixels
//! `oy = iy * stride_h + ky * dilation_h - pad_top` (likewise `ox`). The kernel computes the same sum
//! as a gather: for each output pixel it visits the taps `(ky, kx)` whose source
//! `iy = (oy + pad_top - ky * dilation_h) / stride_h` is a whole number inside the input, so every
//! output is written once and no scratch is needed.
//!
//! Weights are laid out like [`conv`](super::conv)'s, `[OC, KH, KW, IC / groups]`:
//! `w[g * OC/groups + m, ky, kx, c]` is ONNX's `W[g * IC/groups + c, m, ky, kx]` (the converter moves
//! ONNX's `[IC, OC / groups, KH, KW]` into this order; the taps are not flipped).

pub use crate::schema::ConvTranspose2dParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, dot, ensure};
use crate::ops::{In, Out};
use crate::single_threaded_kernel;
use crate::workspace::Workspace;
use crate::Error;

/// Checks the shapes: `x` `[N, H, W, IC]` with `H, W >= 1`, `w` `[OC, KH, KW, IC / groups]` with
/// `KH, KW >= 1`, `b` `[OC]` if present, `y` `[N, OH, OW, OC]` with
/// `OH = stride_h * (H - 1) + output_pad_h + dilation_h * (KH - 1) + 1 - pad_top - pad_bottom`
/// (likewise OW), which must not be negative; every stride, dilation and `groups` non-zero, and
/// `groups` dividing IC and OC.
pub fn validate(
    p: &ConvTranspose2dParams,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    y: &[usize],
) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(w)?;
    check_dims(y)?;
    ensure(x.len() == 4, "conv transpose input is not [N, H, W, IC]")?;
    ensure(
        w.len() == 4,
        "conv transpose weights are not [OC, KH, KW, IC / groups]",
    )?;
    ensure(y.len() == 4, "conv transpose output is not [N, OH, OW, OC]")?;
    ensure(
        p.stride_h > 0 && p.stride_w > 0,
        "conv transpose stride is zero",
    )?;
    ensure(
        p.dilation_h > 0 && p.dilation_w > 0,
        "conv transpose dilation is zero",
    )?;
    ensure(p.groups > 0, "conv transpose groups is zero")?;
    let groups = usize::from(p.groups);
    let (in_channels, out_channels) = (x[3], w[0]);
    ensure(
        in_channels % groups == 0,
        "conv transpose input channels are not a multiple of groups",
    )?;
    ensure(
        out_channels % groups == 0,
        "conv transpose output channels are not a multiple of groups",
    )?;
    ensure(
        w[3] == in_channels / groups,
        "conv transpose weights' last dim is not input channels / groups",
    )?;
    ensure(
        w[1] > 0 && w[2] > 0,
        "conv transpose kernel is empty (KH or KW is 0)",
    )?;
    ensure(
        x[1] > 0 && x[2] > 0,
        "conv transpose input is empty along H or W",
    )?;
    if let Some(b) = b {
        ensure(
            b.len() == 1 && b[0] == out_channels,
            "conv transpose bias is not [OC]",
        )?;
    }
    let out_h = output_len(
        x[1],
        w[1],
        p.stride_h,
        p.dilation_h,
        [p.pad_top, p.pad_bottom],
        p.output_pad_h,
    )?;
    let out_w = output_len(
        x[2],
        w[2],
        p.stride_w,
        p.dilation_w,
        [p.pad_left, p.pad_right],
        p.output_pad_w,
    )?;
    ensure(
        y[0] == x[0],
        "conv transpose output batch differs from input batch",
    )?;
    ensure(
        y[3] == out_channels,
        "conv transpose output channels differ from weights' OC",
    )?;
    ensure(
        y[1] == out_h && y[2] == out_w,
        "conv transpose output H or W does not follow from kernel, stride, dilation, padding and \
         output padding",
    )
}

/// Output length along one axis:
/// `stride * (size - 1) + output_pad + dilation * (k - 1) + 1 - pads[0] - pads[1]`, or an error when
/// it overflows or is negative. Needs `size, k, stride, dilation > 0`.
fn output_len(
    size: usize,
    k: usize,
    stride: u16,
    dilation: u16,
    pads: [u16; 2],
    output_pad: u16,
) -> Result<usize, Error> {
    let overflow = Error::Shape {
        reason: "conv transpose output size overflows usize",
    };
    let full = (size - 1)
        .checked_mul(usize::from(stride))
        .and_then(|s| s.checked_add(usize::from(output_pad)))
        .and_then(|s| s.checked_add((k - 1).checked_mul(usize::from(dilation))?))
        .and_then(|s| s.checked_add(1))
        .ok_or(overflow)?;
    let cropped = usize::from(pads[0]) + usize::from(pads[1]);
    ensure(
        full >= cropped,
        "conv transpose padding crops more than the whole output",
    )?;
    Ok(full - cropped)
}

/// The input position that reaches output position `o` through kernel tap `k`, if any:
/// `(o + pad - k * dilation) / stride` when that is a whole number below `size`.
#[inline]
fn source(
    o: usize,
    pad: usize,
    k: usize,
    dilation: usize,
    stride: usize,
    size: usize,
) -> Option<usize> {
    let t = (o + pad).checked_sub(k * dilation)?;
    if t % stride != 0 {
        return None;
    }
    Some(t / stride).filter(|&i| i < size)
}

/// `y = act(conv_transpose(x, w) + b)`.
///
/// For each output pixel: start from the bias, then for each kernel tap whose source pixel lies inside
/// the input, add for each output channel the dot product of the source pixel's channels of its group
/// with the weight row `w[oc, ky, kx, ..]` (both contiguous).
pub fn conv_transpose2d(
    p: &ConvTranspose2dParams,
    x: In<'_>,
    w: In<'_>,
    b: Option<&[f32]>,
    y: Out<'_>,
) {
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
                    let Some(iy) = source(oy, pad_top, ky, dil_h, stride_h, in_h) else {
                        continue;
                    };
                    for kx in 0..k_w {
                        let Some(ix) = source(ox, pad_left, kx, dil_w, stride_w, in_w) else {
                            continue;
                        };
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

/// Signature of a 2-D transposed convolution kernel.
pub type ConvTranspose2dFn =
    fn(&ConvTranspose2dParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>, Option<&mut Workspace<'_>>);

single_threaded_kernel! {
    /// [`conv_transpose2d`] in the table's signature: it needs no scratch and runs on one thread.
    fn reference = conv_transpose2d(p: &ConvTranspose2dParams, x: In<'_>, w: In<'_>, b: Option<&[f32]>, y: Out<'_>)
}

op_entry! {
    /// The [`Kernels::conv_transpose2d`](crate::Kernels::conv_transpose2d) entry, which runs
    /// [`OpKind::ConvTranspose2d`](crate::OpKind::ConvTranspose2d).
    ConvTranspose2d: ConvTranspose2dFn = reference, ConvTranspose2dParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.dims(1), o.opt(2), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.opt(2)?, out(a.y)?, a.ws);
}
