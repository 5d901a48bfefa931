//! int8 2-D convolution on the DSP extension, bit-identical to `ember_core::ops::quant::conv::conv2d`.
//!
//! - `groups == 1` and `dilation_w == 1` (the common convolution): for an output pixel and a kernel row,
//!   the taps that land inside the input are one contiguous run of `x` (`taps * IC` bytes, NHWC) and one
//!   of `w` (OHWI). The rows are gathered (im2col, as CMSIS-NN does) into a 1 KiB stack buffer with the
//!   padding set to the input zero point, which adds exactly 0, and each output channel's weights (one
//!   contiguous `KH * KW * IC` run) are dotted with it in one go, two output channels at a time
//!   ([`dot_offset2`]). Fields over 1 KiB take one dot product per kernel row. This holds for one input
//!   channel too (a first layer on a grey image).
//! - other grouped or dilated convolutions with at least four input channels per group: core's loop nest
//!   ([`conv2d_with`](reference::conv2d_with)) with the SMLAD inner product ([`Smlad`]), one dot
//!   product per tap over the group's channels.
//! - depthwise (one input channel per group, any channel multiplier), kernels of up to 64 taps: a
//!   channel's taps are strided in `x` (NHWC) but contiguous in `w` (`[OC, KH, KW, 1]`), so for each
//!   output pixel the tap positions are worked out once, each channel's taps are gathered (padding as
//!   the zero point, adding exactly 0) into a small stack buffer, and dotted with the channel's weights.
//! - other groups of two or three input channels, and depthwise kernels over 64 taps: no run worth
//!   packing, so the reference kernel runs.

use ember_core::ops::quant::conv::{self as reference, QuantConv2dParams, QuantConvArgs};
use ember_core::ops::{In, Out};

use super::dot::{dot_offset, dot_offset2, Smlad, STEP};
use ember_core::ops::nn::conv::ConvGeometry;

/// `y = clamp(requant(conv(x - x_zero_point, w) + b) + y_zero_point, act_min, act_max)`: the
/// reference's contract (see `ember_core::ops::quant::conv::conv2d`), for the shapes its `validate`
/// accepts.
pub fn conv2d(
    p: &QuantConv2dParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
) {
    let a = p.args([x.dims, w.dims, y.dims], b, requant);
    let g = &a.g;
    if p.groups == 1 && p.dilation_w == 1 {
        conv2d_rows(&a, x.data, w.data, y.data);
    } else if g.group_in_c >= STEP {
        // Grouped or dilated, at least `STEP` input channels per group: one dot product per tap.
        reference::conv2d_with::<Smlad>(&a, x.data, w.data, y.data);
    } else if g.group_in_c == 1 && g.k_h * g.k_w <= DEPTHWISE_TAPS {
        depthwise_conv2d(&a, x.data, w.data, y.data);
    } else {
        reference::conv2d(p, x, w, b, requant, y);
    }
}

/// Stack bytes for one output pixel's receptive field (`KH * KW * IC`; 3x3 kernels up to 113 input
/// channels). Larger fields take one dot product per kernel row instead.
const PATCH_BYTES: usize = 1024;
/// Output channels from which gathering the receptive field costs less than it saves (measured under
/// QEMU: below it, the per-row dot products are as fast).
const GATHER_MIN_CHANNELS: usize = 4;

/// `groups == 1`, `dilation_w == 1`: the receptive field gathered into [`PATCH_BYTES`] on the stack and
/// one dot product per output channel over it, or, for larger fields, one per kernel row; two output
/// channels at a time either way.
fn conv2d_rows(a: &QuantConvArgs<'_>, x: &[i8], w: &[i8], y: &mut [i8]) {
    if y.is_empty() {
        return;
    }
    let ConvGeometry {
        batch,
        in_h,
        in_w,
        in_c,
        out_c,
        k_h,
        k_w,
        out_h,
        out_w,
        stride_h,
        stride_w,
        dil_h,
        pad_top,
        pad_left,
        ..
    } = a.g;
    let (g, x_offset, x_zero_point) = (&a.g, a.x_offset, a.x_zero_point);
    let finish = |acc: i32, oc: usize| a.stage.finish(acc, oc);

    // The receptive field of one output pixel, gathered when it fits.
    let patch_len = k_h * k_w * in_c;
    // Gathering pays once its cost is shared by a few channels; `in_c > 0` keeps the rows non-empty.
    let gather = out_c >= GATHER_MIN_CHANNELS && in_c > 0;
    let mut patch = [0i8; PATCH_BYTES];

    let mut pixels = y.chunks_exact_mut(out_c);
    for n in 0..batch {
        for oy in 0..out_h {
            for ox in 0..out_w {
                let Some(out) = pixels.next() else { return };
                // The kernel columns whose input column `ox * stride_w + kx - pad_left` is inside
                // `0..in_w`: `kx_lo..kx_hi`, the same for every kernel row and output channel.
                let left = ox * stride_w;
                let kx_lo = pad_left.saturating_sub(left);
                let kx_hi = k_w.min((in_w + pad_left).saturating_sub(left));
                if kx_lo >= kx_hi {
                    // Every tap is padding: the accumulator is the bias alone.
                    for (oc, out) in out.iter_mut().enumerate() {
                        *out = finish(0, oc);
                    }
                    continue;
                }
                let ix_lo = left + kx_lo - pad_left;
                let run = (kx_hi - kx_lo) * in_c;
                // One `x` run per valid kernel row, shared by every output channel.
                let row_of = |ky: usize| {
                    let iy = (oy * stride_h + ky * dil_h).checked_sub(pad_top)?;
                    (iy < in_h).then(|| &x[g.pixel(n, iy, ix_lo)..][..run])
                };
                let w_run =
                    |oc: usize, ky: usize| &w[((oc * k_h + ky) * k_w + kx_lo) * in_c..][..run];

                if gather && patch_len <= PATCH_BYTES {
                    // The pixel's whole receptive field: a 1xK kernel's one full row as it is, else
                    // gathered with the padding set to the input zero point (whose offset term
                    // `x_zero_point + x_offset` is 0, so it adds nothing, as in the reference). Then one
                    // dot product per channel over all `KH * KW * IC` taps: each channel's OHWI weights
                    // are one contiguous run of that length.
                    let whole_row = k_h == 1 && kx_lo == 0 && kx_hi == k_w;
                    let xs = match if whole_row { row_of(0) } else { None } {
                        Some(row) => row,
                        None => {
                            let row_len = k_w * in_c;
                            for (ky, dst) in
                                patch[..patch_len].chunks_exact_mut(row_len).enumerate()
                            {
                                match row_of(ky) {
                                    Some(xs) => {
                                        dst[..kx_lo * in_c].fill(x_zero_point);
                                        dst[kx_lo * in_c..kx_hi * in_c].copy_from_slice(xs);
                                        dst[kx_hi * in_c..].fill(x_zero_point);
                                    }
                                    None => dst.fill(x_zero_point),
                                }
                            }
                            &patch[..patch_len]
                        }
                    };
                    let w_all = |oc: usize| &w[oc * patch_len..][..patch_len];
                    let mut channels = out.chunks_exact_mut(2);
                    for (pair, outs) in (&mut channels).enumerate() {
                        let oc = 2 * pair;
                        let (da, db) = dot_offset2(xs, w_all(oc), w_all(oc + 1), x_offset);
                        outs[0] = finish(da, oc);
                        outs[1] = finish(db, oc + 1);
                    }
                    if let [last] = channels.into_remainder() {
                        let oc = out_c - 1;
                        *last = finish(dot_offset(xs, w_all(oc), x_offset), oc);
                    }
                    continue;
                }

                let mut channels = out.chunks_exact_mut(2);
                for (pair, outs) in (&mut channels).enumerate() {
                    let oc = 2 * pair;
                    let (mut acc_a, mut acc_b) = (0i32, 0i32);
                    for ky in 0..k_h {
                        let Some(xs) = row_of(ky) else { continue };
                        let (da, db) = dot_offset2(xs, w_run(oc, ky), w_run(oc + 1, ky), x_offset);
                        acc_a = acc_a.wrapping_add(da);
                        acc_b = acc_b.wrapping_add(db);
                    }
                    outs[0] = finish(acc_a, oc);
                    outs[1] = finish(acc_b, oc + 1);
                }
                if let [last] = channels.into_remainder() {
                    let oc = out_c - 1;
                    let mut acc = 0i32;
                    for ky in 0..k_h {
                        let Some(xs) = row_of(ky) else { continue };
                        acc = acc.wrapping_add(dot_offset(xs, w_run(oc, ky), x_offset));
                    }
                    *last = finish(acc, oc);
                }
            }
        }
    }
}

/// Most taps a depthwise kernel may have for [`depthwise_conv2d`] (8x8; larger kernels run the
/// reference).
const DEPTHWISE_TAPS: usize = 64;

/// Depthwise (`groups == IC`, one input channel per group, `OC / IC` output channels per input
/// channel): per output pixel, the input offset of every tap (or none, for padding) once; per channel,
/// its taps gathered and one dot product with each of its output channels' contiguous weights.
fn depthwise_conv2d(a: &QuantConvArgs<'_>, x: &[i8], w: &[i8], y: &mut [i8]) {
    if y.is_empty() {
        return;
    }
    let (g, x_offset) = (&a.g, a.x_offset);
    let taps = g.k_h * g.k_w;
    let multiplier = g.out_c / g.groups;
    // Offset in `x` of each tap's pixel (channel 0), `None` in the padding.
    let mut sources = [None::<usize>; DEPTHWISE_TAPS];
    // One channel's taps, padding as the input zero point.
    let mut gathered = [0i8; DEPTHWISE_TAPS];

    let mut pixels = y.chunks_exact_mut(g.out_c);
    for n in 0..g.batch {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                let Some(out) = pixels.next() else { return };
                for (t, source) in sources[..taps].iter_mut().enumerate() {
                    let (ky, kx) = (t / g.k_w, t % g.k_w);
                    *source = g
                        .input_y(oy, ky)
                        .zip(g.input_x(ox, kx))
                        .map(|(iy, ix)| g.pixel(n, iy, ix));
                }
                for (c, outs) in out.chunks_exact_mut(multiplier).enumerate() {
                    for (t, source) in gathered[..taps].iter_mut().zip(&sources[..taps]) {
                        *t = match source {
                            Some(at) => x[at + c],
                            None => a.x_zero_point,
                        };
                    }
                    for (m, out) in outs.iter_mut().enumerate() {
                        let oc = c * multiplier + m;
                        let ws = &w[oc * taps..][..taps];
                        *out = a
                            .stage
                            .finish(dot_offset(&gathered[..taps], ws, x_offset), oc);
                    }
                }
            }
        }
    }
}
