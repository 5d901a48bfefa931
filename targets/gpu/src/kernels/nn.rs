//! Kernels of the `nn` family: direct 2-D convolution (groups, depthwise), fully connected, batched
//! matmul with broadcast batch dims, softmax / log-softmax, layer norm and reductions.
//!
//! One unit computes one output value, summing in the same order as the reference kernel of
//! `ember_core::ops::nn` (so results differ from it only by rounding of fused multiply-adds).

use cubecl::prelude::*;

use super::{nhwc_index, MAX_RANK};
use crate::kernels::math::{activate, broadcast_offsets};

numbered! {
    /// Layout of a conv's `meta`.
    pub(crate) mod conv_meta: usize, len LEN {
        N, H, W, IC, OH, OW, OC, KH, KW, GROUP_IC, GROUP_OC, STRIDE_H, STRIDE_W, DIL_H,
        DIL_W, PAD_TOP, PAD_LEFT, HAS_BIAS,
    }
}

/// A layer with weights, one unit per output value: when `conv`, a convolution `y = act(conv(x, w) +
/// b)` (NHWC input and output, OHWI weights, `meta` as [`conv_meta`]), else a fully connected layer
/// `y[r, o] = act(x[r, :] . w[o, :] + b[o])` (`meta` is `[in features, out features, has bias]`).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn layer(
    x: &[f32],
    w: &[f32],
    bias: &[f32],
    y: &mut [f32],
    meta: &[u32],
    act: u32,
    lo: f32,
    hi: f32,
    #[comptime] conv: bool,
) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        if conv {
            y[pos] = activate(conv2d_value(x, w, bias, meta, pos), act, lo, hi);
        } else {
            y[pos] = activate(fully_connected_value(x, w, bias, meta, pos), act, lo, hi);
        }
    }
}

/// Output value `pos` of a convolution before its activation: the bias, plus the dot product of each
/// tap of the window inside the input, in the reference's order.
#[cube]
fn conv2d_value(x: &[f32], w: &[f32], bias: &[f32], meta: &[u32], pos: usize) -> f32 {
    let (n, oy, ox, oc) = conv_output(meta, pos);
    let group_ic = meta[9] as usize;
    let mut acc = 0.0f32;
    if meta[17] != 0 {
        acc = bias[oc];
    }
    for t in 0..(meta[7] * meta[8]) as usize {
        let (inside, x_at, w_at) = conv_tap(meta, n, oy, ox, oc, t);
        if inside {
            let mut dot = 0.0f32;
            for c in 0..group_ic {
                dot += x[x_at + c] * w[w_at + c];
            }
            acc += dot;
        }
    }
    acc
}

/// Output value `pos` of a fully connected layer before its activation: `x[r, :] . w[o, :] + b[o]`.
#[cube]
fn fully_connected_value(x: &[f32], w: &[f32], bias: &[f32], meta: &[u32], pos: usize) -> f32 {
    let (x_at, w_at, in_f, o) = fully_connected_output(meta, pos);
    let mut dot = 0.0f32;
    for i in 0..in_f {
        dot += x[x_at + i] * w[w_at + i];
    }
    let mut b = 0.0f32;
    if meta[2] != 0 {
        b = bias[o];
    }
    dot + b
}

/// Output value `pos` of a convolution (`meta` is [`conv_meta`]'s) as `(n, oy, ox, oc)`: its batch,
/// row, column and channel.
#[cube]
pub(crate) fn conv_output(meta: &[u32], pos: usize) -> (usize, usize, usize, usize) {
    nhwc_index(pos, meta[4] as usize, meta[5] as usize, meta[6] as usize)
}

/// Tap `t` (row-major over the kernel) of the window of output `(n, oy, ox, oc)` of a convolution
/// (`meta` is [`conv_meta`]'s) as `(inside, x_at, w_at)`: whether the input pixel it reads lies inside
/// the input (not in the padding), and where that pixel's first channel of the output channel's group
/// (`x_at`, when inside) and the tap's weights (`w_at`) start; both run over `GROUP_IC` channels.
#[cube]
pub(crate) fn conv_tap(
    meta: &[u32],
    n: usize,
    oy: usize,
    ox: usize,
    oc: usize,
    t: usize,
) -> (bool, usize, usize) {
    let in_h = meta[1] as usize;
    let in_w = meta[2] as usize;
    let k_w = meta[8] as usize;
    let group_ic = meta[9] as usize;
    let pad_top = meta[15] as usize;
    let pad_left = meta[16] as usize;
    let ry = oy * (meta[11] as usize) + (t / k_w) * (meta[13] as usize);
    let rx = ox * (meta[12] as usize) + (t % k_w) * (meta[14] as usize);
    let inside = ry >= pad_top && ry - pad_top < in_h && rx >= pad_left && rx - pad_left < in_w;
    let mut x_at = 0usize;
    if inside {
        let first_ic = (oc / (meta[10] as usize)) * group_ic;
        x_at = ((n * in_h + ry - pad_top) * in_w + rx - pad_left) * (meta[3] as usize) + first_ic;
    }
    let w_at = (oc * (meta[7] as usize) * k_w + t) * group_ic;
    (inside, x_at, w_at)
}

/// Output value `pos` of a fully connected layer (`meta` is `[in features, out features, ..]`) as
/// `(x_at, w_at, in_f, o)`: where its row of `x` and its output feature's row of `w` start, their
/// length, and the output feature.
#[cube]
pub(crate) fn fully_connected_output(meta: &[u32], pos: usize) -> (usize, usize, usize, usize) {
    let in_f = meta[0] as usize;
    let out_f = meta[1] as usize;
    let o = pos % out_f;
    ((pos / out_f) * in_f, o * in_f, in_f, o)
}

/// `y = a @ b` with broadcast batch dims. `meta` is `[batch rank, M, K, N, y batch dims (6),
/// a matrix strides (6), b matrix strides (6)]` (stride 0 where an operand is broadcast).
#[cube(launch)]
pub(crate) fn matmul(a: &[f32], b: &[f32], y: &mut [f32], meta: &[u32]) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let rank = meta[0] as usize;
        let m = meta[1] as usize;
        let k = meta[2] as usize;
        let n = meta[3] as usize;
        let j = pos % n;
        let i = (pos / n) % m;
        let (a_at, b_at) = broadcast_offsets(meta, 4usize, rank, pos / (m * n));
        let mut acc = 0.0f32;
        for t in 0..k {
            acc += a[a_at + i * k + t] * b[b_at + t * n + j];
        }
        y[pos] = acc;
    }
}

/// Softmax (`log == 0`) or log-softmax along one axis. One unit per lane; `meta` is `[axis length,
/// inner (elements after the axis), lanes]`.
#[cube(launch)]
pub(crate) fn softmax(x: &[f32], y: &mut [f32], meta: &[u32], log: u32) {
    let lane = ABSOLUTE_POS;
    let len = meta[0] as usize;
    let inner = meta[1] as usize;
    if lane < meta[2] as usize {
        let base = (lane / inner) * len * inner + lane % inner;
        let mut top = f32::new(f32::NEG_INFINITY);
        for t in 0..len {
            top = max(top, x[base + t * inner]);
        }
        let mut sum = 0.0f32;
        if log == 0 {
            for t in 0..len {
                let e = (x[base + t * inner] - top).exp();
                y[base + t * inner] = e;
                sum += e;
            }
            let scale = 1.0 / sum;
            for t in 0..len {
                y[base + t * inner] *= scale;
            }
        } else {
            for t in 0..len {
                sum += (x[base + t * inner] - top).exp();
            }
            let log_sum = sum.ln();
            for t in 0..len {
                y[base + t * inner] = (x[base + t * inner] - top) - log_sum;
            }
        }
    }
}

/// Layer norm over the trailing `len` elements of each row; one unit per row. `meta` is `[len, rows,
/// has bias]`.
#[cube(launch)]
pub(crate) fn layer_norm(
    x: &[f32],
    scale: &[f32],
    bias: &[f32],
    y: &mut [f32],
    meta: &[u32],
    epsilon: f32,
) {
    let row = ABSOLUTE_POS;
    let len = meta[0] as usize;
    if row < meta[1] as usize {
        let base = row * len;
        let n = f32::cast_from(len as u32);
        // meta[3] != 0: RMS normalization (no mean taken out, no bias), as the CPU's
        // `x / sqrt(mean(x^2) + epsilon) * scale`.
        let rms = meta[3] != 0;
        let mut mean = 0.0f32;
        if !rms {
            let mut sum = 0.0f32;
            for i in 0..len {
                sum += x[base + i];
            }
            mean = sum / n;
        }
        let mut var = 0.0f32;
        for i in 0..len {
            let d = x[base + i] - mean;
            var += d * d;
        }
        var /= n;
        let root = (var + epsilon).sqrt();
        let inv_std = 1.0 / root;
        for i in 0..len {
            let mut b = 0.0f32;
            if meta[2] != 0 {
                b = bias[i];
            }
            if rms {
                y[base + i] = x[base + i] / root * scale[i];
            } else {
                y[base + i] = (x[base + i] - mean) * inv_std * scale[i] + b;
            }
        }
    }
}

numbered! {
    /// Reduce op codes (`ReduceOp` in ember-core).
    pub(crate) mod reduce_code: u32 {
        SUM, MEAN, MAX, MIN, PROD, L1, L2, LOG_SUM_EXP, SUM_SQUARE, LOG_SUM,
    }
}

/// Offset in `x` of element `index` of the `rank` dims at `meta[dims..]`, with the strides at
/// `meta[strides..]`. A reduction's `meta` is `[rank, lane count, kept dims (6), lane dims (6), x
/// strides (6)]` (a kept dim is 1 on a reduced axis, a lane dim 1 on a kept one): an output's first
/// element is its index over the kept dims, an element of its lane that plus its index over the lane's.
#[cube]
fn strided_offset(meta: &[u32], dims: usize, strides: usize, rank: usize, index: usize) -> usize {
    let mut rem = index;
    let mut at = 0usize;
    for t in 0..rank {
        let d = rank - 1 - t;
        let dim = meta[dims + d] as usize;
        let idx = rem % dim;
        rem /= dim;
        at += idx * meta[strides + d] as usize;
    }
    at
}

/// Offset of element `j` of an output's lane from the output's first element.
#[cube]
fn lane_offset(meta: &[u32], j: usize, rank: usize) -> usize {
    strided_offset(meta, 2 + MAX_RANK, 2 + 2 * MAX_RANK, rank, j)
}

/// One reduction per unit (one output value).
#[cube(launch)]
pub(crate) fn reduce(x: &[f32], y: &mut [f32], meta: &[u32], op: u32) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let rank = meta[0] as usize;
        let count = meta[1] as usize;
        let start = strided_offset(meta, 2usize, 2 + 2 * MAX_RANK, rank, pos);
        let mut acc = 0.0f32;
        if op == 2 || op == 7 {
            acc = f32::new(f32::NEG_INFINITY);
        } else if op == 3 {
            acc = f32::new(f32::INFINITY);
        } else if op == 4 {
            acc = 1.0f32;
        }
        for j in 0..count {
            let v = x[start + lane_offset(meta, j, rank)];
            if op == 2 || op == 7 {
                if v > acc || v.is_nan() {
                    acc = v;
                }
            } else if op == 3 {
                if v < acc || v.is_nan() {
                    acc = v;
                }
            } else if op == 4 {
                acc *= v;
            } else if op == 5 {
                acc += v.abs();
            } else if op == 6 || op == 8 {
                acc += v * v;
            } else {
                acc += v;
            }
        }
        if op == 1 {
            acc /= f32::cast_from(count as u32);
        } else if op == 6 {
            acc = acc.sqrt();
        } else if op == 9 {
            acc = acc.ln();
        } else if op == 7 {
            let max = acc;
            if !(max == f32::new(f32::INFINITY) || max == f32::new(f32::NEG_INFINITY)) {
                let mut sum = 0.0f32;
                for j in 0..count {
                    sum += (x[start + lane_offset(meta, j, rank)] - max).exp();
                }
                acc = max + sum.ln();
            }
        }
        y[pos] = acc;
    }
}
