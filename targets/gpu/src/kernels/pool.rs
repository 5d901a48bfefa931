//! Pooling kernels over NHWC activations: max and average windows, and global average pooling.

use cubecl::prelude::*;

use super::nhwc_index;

numbered! {
    /// Layout of a pool's `meta`.
    pub(crate) mod pool_meta: usize, len LEN {
        H, W, C, OH, OW, KH, KW, STRIDE_H, STRIDE_W, PAD_TOP, PAD_LEFT, INCLUDE_PAD,
    }
}

/// The window of output value `pos` of a pooling kernel (`meta` is [`pool_meta`]'s), clipped to the
/// input as in the reference kernel: `(at, y0, y1, x0, x1)`, where the window covers rows `y0..y1` and
/// columns `x0..x1` and input cell `(iy, ix)` of its channel is `x[at + (iy * W + ix) * C]`.
#[cube]
pub(crate) fn pool_window(meta: &[u32], pos: usize) -> (usize, usize, usize, usize, usize) {
    let in_h = meta[0] as usize;
    let in_w = meta[1] as usize;
    let c_len = meta[2] as usize;
    let out_h = meta[3] as usize;
    let out_w = meta[4] as usize;
    let k_h = meta[5] as usize;
    let k_w = meta[6] as usize;
    let pad_top = meta[9] as usize;
    let pad_left = meta[10] as usize;

    let (n, oy, ox, c) = nhwc_index(pos, out_h, out_w, c_len);

    let sy = oy * (meta[7] as usize);
    let sx = ox * (meta[8] as usize);
    let (y0, y1) = clipped(sy, k_h, pad_top, in_h);
    let (x0, x1) = clipped(sx, k_w, pad_left, in_w);
    (n * in_h * in_w * c_len + c, y0, y1, x0, x1)
}

/// One axis of a window clipped to the input: the window starts at `s` of the padded axis and is `k`
/// long, the input `len` long after `pad` of padding. Returns `[max(s, pad), min(s + k, pad + len)) -
/// pad` as `(start, end)`.
#[cube]
fn clipped(s: usize, k: usize, pad: usize, len: usize) -> (usize, usize) {
    let mut start = 0usize;
    if s > pad {
        start = s - pad;
    }
    let mut end = len;
    if s + k < pad + len {
        end = s + k - pad;
    }
    (start, end)
}

/// Max (`avg == 0`) or average pooling; one unit per output value. Windows are clipped to the input,
/// as in the reference kernel; the average divides by the full window when padding counts.
#[cube(launch)]
pub(crate) fn pool2d(x: &[f32], y: &mut [f32], meta: &[u32], avg: u32) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let (at, y0, y1, x0, x1) = pool_window(meta, pos);
        let c_len = meta[2] as usize;
        let row = meta[1] as usize * c_len;
        let mut acc = 0.0f32;
        if avg == 0 {
            acc = f32::new(f32::NEG_INFINITY);
        }
        for iy in y0..y1 {
            for ix in x0..x1 {
                let v = x[at + iy * row + ix * c_len];
                if avg == 0 {
                    acc = max(acc, v);
                } else {
                    acc += v;
                }
            }
        }
        if avg != 0 {
            let mut count = (y1 - y0) * (x1 - x0);
            if meta[11] != 0 {
                count = (meta[5] * meta[6]) as usize;
            }
            acc *= 1.0 / f32::cast_from(count as u32);
        }
        y[pos] = acc;
    }
}

/// `[N, H, W, C]` to `[N, 1, 1, C]`; one unit per `(n, c)`. `meta` is `[H * W, C]`.
#[cube(launch)]
pub(crate) fn global_avg_pool(x: &[f32], y: &mut [f32], meta: &[u32]) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let area = meta[0] as usize;
        let channels = meta[1] as usize;
        let c = pos % channels;
        let n = pos / channels;
        let mut acc = 0.0f32;
        for p in 0..area {
            acc += x[(n * area + p) * channels + c];
        }
        acc *= 1.0 / f32::cast_from(area as u32);
        y[pos] = acc;
    }
}
