//! Host-side tables that a lowering computes once per session from shapes and parameters alone: the
//! im2col gather map of a convolution and of a transposed one, and the source rows, columns and weights of a resize that
//! interpolates (at the reference kernel's coordinates). The caller narrows them to `u32`.

use ember_core::ops::array::resize::{self, ResizeParams};
use ember_core::ops::nn::conv::Conv2dParams;
use ember_core::ops::nn::conv_transpose::ConvTranspose2dParams;

use crate::kernels::array::NO_SOURCE;

/// Largest im2col scratch matrix, in elements (64 MiB of f32); bigger convolutions run direct.
const MAX_IM2COL: usize = 16 << 20;

/// Whether an im2col scratch matrix of `pixels` rows by `taps` columns is within [`MAX_IM2COL`].
fn im2col_size_fits(pixels: usize, taps: usize) -> bool {
    pixels
        .checked_mul(taps)
        .is_some_and(|n| n > 0 && n <= MAX_IM2COL)
}

/// Whether a convolution runs as im2col + GEMM: one group (a grouped or depthwise convolution reads few
/// inputs per output and runs direct), a window larger than one pixel (a 1x1 convolution's im2col would
/// only copy its input), and a scratch matrix within [`MAX_IM2COL`].
pub(super) fn im2col_fits(p: &Conv2dParams, xd: &[usize], wd: &[usize], yd: &[usize]) -> bool {
    p.groups == 1
        && wd[1] * wd[2] > 1
        && xd.len() == 4
        && im2col_size_fits(yd[0] * yd[1] * yd[2], wd[1] * wd[2] * wd[3])
}

/// Why a transposed convolution cannot run as im2col + GEMM (its only GPU path), or `None` when it can:
/// one group, and a scratch matrix within [`MAX_IM2COL`].
pub(super) fn conv_transpose_refusal(
    p: &ConvTranspose2dParams,
    wd: &[usize],
    yd: &[usize],
) -> Option<String> {
    let (pixels, taps) = (yd[0] * yd[1] * yd[2], wd[1] * wd[2] * wd[3]);
    if p.groups != 1 {
        Some(format!(
            "a transposed convolution with {} groups has no GPU kernel (one group runs); run it on \
             the CPU",
            p.groups
        ))
    } else if !im2col_size_fits(pixels, taps) {
        Some(format!(
            "a transposed convolution's im2col matrix of {pixels} x {taps} is over the GPU path's \
             {MAX_IM2COL} elements; run it on the CPU"
        ))
    } else {
        None
    }
}

/// The im2col gather map: for output pixel `(n, oy, ox)` and tap `(ky, kx, c)`, the NHWC input index
/// the window reads, or `NO_SOURCE` where it lies in the padding.
pub(super) fn im2col_map(p: &Conv2dParams, xd: &[usize], wd: &[usize], yd: &[usize]) -> Vec<u32> {
    let rows = Axis::new(p.stride_h, p.dilation_h, p.pad_top, xd[1]);
    let cols = Axis::new(p.stride_w, p.dilation_w, p.pad_left, xd[2]);
    window_map(xd, wd, yd, [rows, cols], conv_source)
}

/// The gather map of a transposed convolution as an im2col: for output pixel `(n, oy, ox)` and tap
/// `(ky, kx, c)`, the NHWC input index whose scatter reaches that pixel through that tap, or
/// `NO_SOURCE` (see [`conv_transpose_source`]). With the weights' `[OC, KH, KW, IC]` rows the GEMM then
/// gives the reference's sum.
pub(super) fn conv_transpose_map(
    p: &ConvTranspose2dParams,
    xd: &[usize],
    wd: &[usize],
    yd: &[usize],
) -> Vec<u32> {
    let rows = Axis::new(p.stride_h, p.dilation_h, p.pad_top, xd[1]);
    let cols = Axis::new(p.stride_w, p.dilation_w, p.pad_left, xd[2]);
    window_map(xd, wd, yd, [rows, cols], conv_transpose_source)
}

/// One axis of a window: its stride, dilation, the padding before it, and the input's length.
#[derive(Clone, Copy)]
struct Axis {
    stride: usize,
    dilation: usize,
    pad: usize,
    len: usize,
}

impl Axis {
    fn new(stride: u16, dilation: u16, pad: u16, len: usize) -> Axis {
        Axis {
            stride: usize::from(stride),
            dilation: usize::from(dilation),
            pad: usize::from(pad),
            len,
        }
    }
}

/// The input row (or column) that tap `k` of output row `o` reads along axis `a`; `None` where there
/// is none.
type Source = fn(o: usize, k: usize, a: Axis) -> Option<usize>;

/// A convolution's: input row `o * stride + k * dilation - pad`.
fn conv_source(o: usize, k: usize, a: Axis) -> Option<usize> {
    (o * a.stride + k * a.dilation)
        .checked_sub(a.pad)
        .filter(|&i| i < a.len)
}

/// A transposed convolution's, the reference kernel's gather (`ember_core::ops::nn::conv_transpose`):
/// input row `(o + pad - k * dilation) / stride` where that is a whole number inside the input.
fn conv_transpose_source(o: usize, k: usize, a: Axis) -> Option<usize> {
    (o + a.pad)
        .checked_sub(k * a.dilation)
        .filter(|r| r % a.stride == 0)
        .map(|r| r / a.stride)
        .filter(|&i| i < a.len)
}

/// An im2col map over NHWC `xd`, `[OC, KH, KW, C]` weights `wd` and output `yd`: a row per output pixel,
/// a column per tap `(ky, kx, c)`, holding the input index `source` gives along the `[rows, cols]`
/// axes, or `NO_SOURCE` where either axis has none.
fn window_map(
    xd: &[usize],
    wd: &[usize],
    yd: &[usize],
    [rows, cols]: [Axis; 2],
    source: Source,
) -> Vec<u32> {
    let (h, w, c_len) = (xd[1], xd[2], xd[3]);
    let (kh, kw) = (wd[1], wd[2]);
    let mut map = Vec::with_capacity(yd[0] * yd[1] * yd[2] * kh * kw * c_len);
    for n in 0..yd[0] {
        for oy in 0..yd[1] {
            for ox in 0..yd[2] {
                for ky in 0..kh {
                    let iy = source(oy, ky, rows);
                    for kx in 0..kw {
                        let ix = source(ox, kx, cols);
                        for c in 0..c_len {
                            map.push(match (iy, ix) {
                                (Some(iy), Some(ix)) => {
                                    (((n * h + iy) * w + ix) * c_len + c) as u32
                                }
                                _ => NO_SOURCE,
                            });
                        }
                    }
                }
            }
        }
    }
    map
}

/// Taps of a filtered (bicubic or antialiased) resize: `([h_in, w_in, h_out, w_out, c, kh, kw, iy..,
/// ix..], [wy.., wx..])`, `kh` taps per output row and `kw` per output column, from the reference
/// kernel's coordinates and weights (`resize::source`, `filter_taps`).
pub(super) fn resize_filter_tables(
    p: &ResizeParams,
    xd: &[usize],
    yd: &[usize],
) -> (Vec<usize>, Vec<f32>) {
    let h = resize::h_axis(p, xd.len());
    let (h_in, w_in, h_out, w_out) = (xd[h], xd[h + 1], yd[h], yd[h + 1]);
    let c: usize = xd[h + 2..].iter().product();
    let kh = resize::filter_width(p.mode, p.scale_h);
    let kw = resize::filter_width(p.mode, p.scale_w);
    let mut rows = vec![h_in, w_in, h_out, w_out, c, kh, kw];
    let mut weights = Vec::with_capacity(h_out * kh + w_out * kw);
    if h_in == 0 || w_in == 0 {
        // Empty input: validation guarantees an empty output, so nothing is launched.
        return (rows, weights);
    }
    let axes = [(h_in, h_out, p.scale_h), (w_in, w_out, p.scale_w)];
    for (len_in, len_out, scale) in axes {
        for o in 0..len_out {
            let c = resize::source(p.coord, o, len_in, len_out, scale);
            resize::filter_taps(p.mode, c, len_in, scale, |i, w| {
                rows.push(i);
                weights.push(w);
            });
        }
    }
    (rows, weights)
}

/// Source rows and columns of a bilinear resize: `([h_in, w_in, h_out, w_out, c, y0.., y1.., x0..,
/// x1..], [fy.., fx..])`, at the reference kernel's coordinates (`resize::source`, `neighbours`).
pub(super) fn resize_tables(
    p: &ResizeParams,
    xd: &[usize],
    yd: &[usize],
) -> (Vec<usize>, Vec<f32>) {
    let h = resize::h_axis(p, xd.len());
    let (h_in, w_in, h_out, w_out) = (xd[h], xd[h + 1], yd[h], yd[h + 1]);
    let c: usize = xd[h + 2..].iter().product();
    let mut rows = vec![h_in, w_in, h_out, w_out, c];
    let mut fracs = Vec::with_capacity(h_out + w_out);
    if h_in == 0 || w_in == 0 {
        // Empty input: validation guarantees an empty output, so nothing is launched.
        return (rows, fracs);
    }
    let ys: Vec<_> = (0..h_out)
        .map(|o| resize::neighbours(resize::source(p.coord, o, h_in, h_out, p.scale_h), h_in))
        .collect();
    let xs: Vec<_> = (0..w_out)
        .map(|o| resize::neighbours(resize::source(p.coord, o, w_in, w_out, p.scale_w), w_in))
        .collect();
    rows.extend(ys.iter().map(|t| t.0));
    rows.extend(ys.iter().map(|t| t.1));
    rows.extend(xs.iter().map(|t| t.0));
    rows.extend(xs.iter().map(|t| t.1));
    fracs.extend(ys.iter().map(|t| t.2));
    fracs.extend(xs.iter().map(|t| t.2));
    (rows, fracs)
}
