//! Kernels of the `nn` family: direct 2-D convolution (groups, depthwise), fully connected, batched
//! matmul with broadcast batch dims, softmax / log-softmax, layer norm and reductions.
//!
//! One unit computes one output value, summing in the same order as the reference kernel of
//! `ember_core::ops::nn` (so results differ from it only by rounding of fused multiply-adds).

use cubecl::prelude::*;

use super::MAX_RANK;
use crate::kernels::math::{activate, broadcast_offsets};

/// Layout of a conv's `meta`.
pub(crate) mod conv_meta {
    pub const N: usize = 0;
    pub const H: usize = 1;
    pub const W: usize = 2;
    pub const IC: usize = 3;
    pub const OH: usize = 4;
    pub const OW: usize = 5;
    pub const OC: usize = 6;
    pub const KH: usize = 7;
    pub const KW: usize = 8;
    pub const GROUP_IC: usize = 9;
    pub const GROUP_OC: usize = 10;
    pub const STRIDE_H: usize = 11;
    pub const STRIDE_W: usize = 12;
    pub const DIL_H: usize = 13;
    pub const DIL_W: usize = 14;
    pub const PAD_TOP: usize = 15;
    pub const PAD_LEFT: usize = 16;
    pub const HAS_BIAS: usize = 17;
    pub const LEN: usize = 18;
}

/// `y = act(conv(x, w) + b)`, NHWC input and output, OHWI weights. One unit per output value.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv2d(
    x: &[f32],
    w: &[f32],
    bias: &[f32],
    y: &mut [f32],
    meta: &[u32],
    act: u32,
    lo: f32,
    hi: f32,
) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let in_h = meta[1] as usize;
        let in_w = meta[2] as usize;
        let in_c = meta[3] as usize;
        let out_h = meta[4] as usize;
        let out_w = meta[5] as usize;
        let out_c = meta[6] as usize;
        let k_h = meta[7] as usize;
        let k_w = meta[8] as usize;
        let group_ic = meta[9] as usize;
        let group_oc = meta[10] as usize;
        let stride_h = meta[11] as usize;
        let stride_w = meta[12] as usize;
        let dil_h = meta[13] as usize;
        let dil_w = meta[14] as usize;
        let pad_top = meta[15] as usize;
        let pad_left = meta[16] as usize;

        let oc = pos % out_c;
        let pixel = pos / out_c;
        let ox = pixel % out_w;
        let rest = pixel / out_w;
        let oy = rest % out_h;
        let n = rest / out_h;
        let first_ic = (oc / group_oc) * group_ic;

        let mut acc = 0.0f32;
        if meta[17] != 0 {
            acc = bias[oc];
        }
        for ky in 0..k_h {
            let ry = oy * stride_h + ky * dil_h;
            if ry >= pad_top && ry - pad_top < in_h {
                let iy = ry - pad_top;
                for kx in 0..k_w {
                    let rx = ox * stride_w + kx * dil_w;
                    if rx >= pad_left && rx - pad_left < in_w {
                        let ix = rx - pad_left;
                        let x_at = ((n * in_h + iy) * in_w + ix) * in_c + first_ic;
                        let w_at = ((oc * k_h + ky) * k_w + kx) * group_ic;
                        let mut dot = 0.0f32;
                        for c in 0..group_ic {
                            dot += x[x_at + c] * w[w_at + c];
                        }
                        acc += dot;
                    }
                }
            }
        }
        y[pos] = activate(acc, act, lo, hi);
    }
}

/// `y[r, o] = act(x[r, :] . w[o, :] + b[o])`; `meta` is `[in features, out features, has bias]`.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fully_connected(
    x: &[f32],
    w: &[f32],
    bias: &[f32],
    y: &mut [f32],
    meta: &[u32],
    act: u32,
    lo: f32,
    hi: f32,
) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let in_f = meta[0] as usize;
        let out_f = meta[1] as usize;
        let o = pos % out_f;
        let r = pos / out_f;
        let mut dot = 0.0f32;
        for i in 0..in_f {
            dot += x[r * in_f + i] * w[o * in_f + i];
        }
        let mut b = 0.0f32;
        if meta[2] != 0 {
            b = bias[o];
        }
        y[pos] = activate(dot + b, act, lo, hi);
    }
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
        let mut sum = 0.0f32;
        for i in 0..len {
            sum += x[base + i];
        }
        let mean = sum / n;
        let mut var = 0.0f32;
        for i in 0..len {
            let d = x[base + i] - mean;
            var += d * d;
        }
        var /= n;
        let inv_std = 1.0 / (var + epsilon).sqrt();
        for i in 0..len {
            let mut b = 0.0f32;
            if meta[2] != 0 {
                b = bias[i];
            }
            y[base + i] = (x[base + i] - mean) * inv_std * scale[i] + b;
        }
    }
}

/// Reduce op codes (`ReduceOp` in ember-core).
pub(crate) mod reduce_code {
    pub const SUM: u32 = 0;
    pub const MEAN: u32 = 1;
    pub const MAX: u32 = 2;
    pub const MIN: u32 = 3;
    pub const PROD: u32 = 4;
    pub const L1: u32 = 5;
    pub const L2: u32 = 6;
    pub const LOG_SUM_EXP: u32 = 7;
    pub const SUM_SQUARE: u32 = 8;
    pub const LOG_SUM: u32 = 9;
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
