//! Pooling windows: their parameters, output lengths by the textbook formula, the input cells a window
//! covers, whether a pool is well-formed by that definition, and the valid and odd pools the f32 and
//! int8 suites draw (each with values of its own).

use ember_core::ops::pool::Pool2dParams;
use proptest::prelude::*;

use crate::shape::dim;

/// The parameters of a window `kernel` (height, width) moving by `stride`, with paddings `[top, left,
/// bottom, right]`.
pub fn pool_params(
    kernel: (u16, u16),
    stride: (u16, u16),
    pads: [u16; 4],
    count_include_pad: bool,
) -> Pool2dParams {
    let [pad_top, pad_left, pad_bottom, pad_right] = pads;
    Pool2dParams {
        kernel_h: kernel.0,
        kernel_w: kernel.1,
        stride_h: stride.0,
        stride_w: stride.1,
        pad_top,
        pad_left,
        pad_bottom,
        pad_right,
        count_include_pad,
    }
}

/// Output length along one axis by the textbook formula (floor), `None` if the window does not fit.
pub fn pool_output_len(size: usize, k: u16, stride: u16, pads: (u16, u16)) -> Option<usize> {
    let padded = size + usize::from(pads.0) + usize::from(pads.1);
    let k = usize::from(k);
    (padded >= k).then(|| (padded - k) / usize::from(stride) + 1)
}

/// The NHWC output dims of pool `p` over `x_dims` by the textbook formula, `None` if the window does
/// not fit.
pub fn pool_output(p: &Pool2dParams, x_dims: [usize; 4]) -> Option<[usize; 4]> {
    let [n, h, w, c] = x_dims;
    let oh = pool_output_len(h, p.kernel_h, p.stride_h, (p.pad_top, p.pad_bottom))?;
    let ow = pool_output_len(w, p.kernel_w, p.stride_w, (p.pad_left, p.pad_right))?;
    Some([n, oh, ow, c])
}

/// Input rows (or columns) covered by window `o`, as `lo..hi` in input coordinates (maybe empty).
pub fn covered(
    o: usize,
    k: u16,
    stride: u16,
    pad_before: u16,
    size: usize,
) -> core::ops::Range<usize> {
    let start = (o * usize::from(stride)) as i64 - i64::from(pad_before);
    let end = start + i64::from(k);
    let lo = start.clamp(0, size as i64) as usize;
    let hi = end.clamp(0, size as i64) as usize;
    lo..hi
}

/// Whether a pool is well-formed, by the definition: a non-empty window and stride, the output shape
/// the formula gives, and every window covering at least one input cell (found by trying them all).
pub fn pool_is_valid(p: &Pool2dParams, x_dims: [usize; 4], y_dims: [usize; 4]) -> bool {
    let [_, h, w, _] = x_dims;
    if p.kernel_h == 0 || p.kernel_w == 0 || p.stride_h == 0 || p.stride_w == 0 {
        return false;
    }
    let Some(y) = pool_output(p, x_dims) else {
        return false;
    };
    let [_, oh, ow, _] = y;
    let rows_ok = (0..oh).all(|o| !covered(o, p.kernel_h, p.stride_h, p.pad_top, h).is_empty());
    let cols_ok = (0..ow).all(|o| !covered(o, p.kernel_w, p.stride_w, p.pad_left, w).is_empty());
    rows_ok && cols_ok && y_dims == y
}

/// A valid pool and its input and output dims: windows 1 to 4, strides 1 to 3, paddings 0 to 2 but
/// below the window (so that every window sees an input cell), an input just large enough plus 0 to 3.
pub fn valid_pool() -> impl Strategy<Value = (Pool2dParams, [usize; 4], [usize; 4])> {
    let window = (1u16..=4, 1u16..=4, 1u16..=3, 1u16..=3);
    (window, dim(), dim(), 0usize..4, 0usize..4, any::<bool>())
        .prop_flat_map(|(window, n, c, extra_h, extra_w, include_pad)| {
            let (kh, kw, _, _) = window;
            let pad = |k: u16| 0u16..=(k - 1).min(2);
            let pads = [pad(kh), pad(kw), pad(kh), pad(kw)];
            (Just((window, n, c, extra_h, extra_w, include_pad)), pads)
        })
        .prop_map(
            |(((kh, kw, sh, sw), n, c, extra_h, extra_w, include_pad), pads)| {
                let [pt, pl, pb, pr] = pads;
                let p = pool_params((kh, kw), (sh, sw), pads, include_pad);
                let h = usize::from(kh).saturating_sub(usize::from(pt + pb)).max(1) + extra_h;
                let w = usize::from(kw).saturating_sub(usize::from(pl + pr)).max(1) + extra_w;
                let oh = pool_output_len(h, kh, sh, (pt, pb)).unwrap_or(0);
                let ow = pool_output_len(w, kw, sw, (pl, pr)).unwrap_or(0);
                (p, [n, h, w, c], [n, oh, ow, c])
            },
        )
}

/// An odd pool over `x_dims` (window and stride `(kh, kw, sh, sw)` possibly 0, paddings possibly past
/// the window) and the output dims it should have by the formula (1 where it has none), one of them
/// off by one when `off_by_one` names it.
pub fn odd_pool(
    x_dims: [usize; 4],
    (kh, kw, sh, sw): (u16, u16, u16, u16),
    pads: [u16; 4],
    off_by_one: Option<usize>,
    include_pad: bool,
) -> (Pool2dParams, [usize; 4]) {
    let [pt, pl, pb, pr] = pads;
    let p = pool_params((kh, kw), (sh, sw), pads, include_pad);
    let out_len = |size, k, s, pads| {
        if s == 0 {
            1
        } else {
            pool_output_len(size, k, s, pads).unwrap_or(1)
        }
    };
    let [n, h, w, c] = x_dims;
    let mut y_dims = [
        n,
        out_len(h, kh, sh, (pt, pb)),
        out_len(w, kw, sw, (pl, pr)),
        c,
    ];
    if let Some(axis) = off_by_one {
        y_dims[axis] += 1;
    }
    (p, y_dims)
}
