//! The recurrent layer (`ember_core::ops::nn::rnn`: ONNX RNN, GRU, LSTM) as a sequence of launches of
//! one kernel, one unit per `(direction, batch row, hidden unit)`: the units of a step need every
//! hidden unit of the step before, which no grid-wide barrier gives inside a launch, so each time step
//! is its own launches. Per op: one [`rnn_phase::INIT`] launch, then per step a
//! [`rnn_phase::RESET`] launch (GRU with `linear_before_reset=0` only: `r * h` into the working row), a
//! [`rnn_phase::STEP`] launch (the new `h` into `Y[t]`, the LSTM's `c` in place) and a
//! [`rnn_phase::COPY`] launch (`Y[t]` into the `Y_h` row). The output's layout, and the order of the
//! sums, are the reference kernel's.

use cubecl::prelude::*;

numbered! {
    /// Layout of a recurrent layer's `meta`.
    pub(crate) mod rnn_meta: usize, len LEN {
        SEQ, BATCH, INPUT, HIDDEN, DIRS,
        /// 1 when the only direction is the reverse one.
        REVERSE,
        /// One of [`super::rnn_cell`].
        CELL,
        LINEAR_BEFORE_RESET, HAS_B, HAS_H0, HAS_C0, HAS_P,
    }
}

numbered! {
    /// The cells (`RnnCell` in ember-core).
    pub(crate) mod rnn_cell: u32 { SIMPLE, GRU, LSTM }
}

numbered! {
    /// What a launch of [`rnn`] does.
    pub(crate) mod rnn_phase: u32 {
        /// The state rows from `h0` and `c0` (or zeros).
        INIT,
        /// The GRU's `r * h` into the working row.
        RESET,
        /// One time step: `Y[t]` (and the LSTM's cell state).
        STEP,
        /// `Y[t]` into the `Y_h` row.
        COPY,
    }
}

#[cube]
fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

#[cube]
fn bound(v: f32, clip: f32) -> f32 {
    let mut r = v;
    if r > clip {
        r = clip;
    }
    if r < -clip {
        r = -clip;
    }
    r
}

/// `W_k x_t + Wb_k` of unit `j` (direction `d`, batch row `bi`, time `t`).
#[cube]
#[allow(clippy::too_many_arguments)]
fn input_part(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    meta: &[u32],
    d: usize,
    bi: usize,
    t: usize,
    k: usize,
    j: usize,
) -> f32 {
    let (batch, input, hidden) = (meta[1] as usize, meta[2] as usize, meta[3] as usize);
    let gates = gate_count(meta);
    let row = d * gates * hidden + k * hidden + j;
    let x_at = (t * batch + bi) * input;
    let mut acc = 0.0f32;
    for i in 0..input {
        acc += w[row * input + i] * x[x_at + i];
    }
    let mut bias = 0.0f32;
    if meta[8] != 0 {
        bias = b[d * 2 * gates * hidden + k * hidden + j];
    }
    acc + bias
}

/// `R_k v + Rb_k` of unit `j`, `v` the `hidden` values of `y` from `v_at` (`y` is the kernel's output,
/// which it only reads here).
#[cube]
#[allow(clippy::too_many_arguments)]
fn recurrent_part(
    r: &[f32],
    b: &[f32],
    y: &mut [f32],
    meta: &[u32],
    d: usize,
    v_at: usize,
    k: usize,
    j: usize,
) -> f32 {
    let hidden = meta[3] as usize;
    let gates = gate_count(meta);
    let row = d * gates * hidden + k * hidden + j;
    let mut acc = 0.0f32;
    for i in 0..hidden {
        acc += r[row * hidden + i] * y[v_at + i];
    }
    let mut bias = 0.0f32;
    if meta[8] != 0 {
        bias = b[d * 2 * gates * hidden + gates * hidden + k * hidden + j];
    }
    acc + bias
}

#[cube]
fn gate_count(meta: &[u32]) -> usize {
    let mut g = 1usize;
    if meta[6] == 1 {
        g = 3;
    }
    if meta[6] == 2 {
        g = 4;
    }
    g
}

/// One phase of a recurrent layer at time step `step` (see the module doc); `y` is the op's output
/// `[seq + 2, dirs, batch, hidden]`, absent optional inputs the dummy buffer.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn rnn(
    x: &[f32],
    w: &[f32],
    r: &[f32],
    b: &[f32],
    h0: &[f32],
    c0: &[f32],
    p: &[f32],
    y: &mut [f32],
    meta: &[u32],
    clip: f32,
    phase: u32,
    step: u32,
) {
    let pos = ABSOLUTE_POS;
    let (seq, batch, hidden, dirs) = (
        meta[0] as usize,
        meta[1] as usize,
        meta[3] as usize,
        meta[4] as usize,
    );
    if pos < dirs * batch * hidden {
        let d = pos / (batch * hidden);
        let bi = (pos / hidden) % batch;
        let j = pos % hidden;
        let plane = batch * hidden;
        let unit = bi * hidden + j;
        let h_at = (seq * dirs + d) * plane;
        let c_at = ((seq + 1) * dirs + d) * plane;
        let mut t = step as usize;
        if d == 1 || meta[5] != 0 {
            t = seq - 1 - t;
        }
        let y_at = (t * dirs + d) * plane;
        let h_row = h_at + bi * hidden;
        if phase == 0 {
            let mut h = 0.0f32;
            if meta[9] != 0 {
                h = h0[d * plane + unit];
            }
            let mut c = 0.0f32;
            if meta[10] != 0 {
                c = c0[d * plane + unit];
            }
            y[h_at + unit] = h;
            y[c_at + unit] = c;
        } else if phase == 1 {
            let z = recurrent_part(r, b, y, meta, d, h_row, 1, j);
            let rg = sigmoid(bound(input_part(x, w, b, meta, d, bi, t, 1, j) + z, clip));
            y[c_at + unit] = rg * y[h_at + unit];
        } else if phase == 2 {
            let h_prev = y[h_at + unit];
            if meta[6] == 0 {
                let pre = input_part(x, w, b, meta, d, bi, t, 0, j)
                    + recurrent_part(r, b, y, meta, d, h_row, 0, j);
                y[y_at + unit] = bound(pre, clip).tanh();
            } else if meta[6] == 1 {
                let zp = input_part(x, w, b, meta, d, bi, t, 0, j)
                    + recurrent_part(r, b, y, meta, d, h_row, 0, j);
                let z = sigmoid(bound(zp, clip));
                let mut n = input_part(x, w, b, meta, d, bi, t, 2, j);
                if meta[7] != 0 {
                    let rp = input_part(x, w, b, meta, d, bi, t, 1, j)
                        + recurrent_part(r, b, y, meta, d, h_row, 1, j);
                    n += sigmoid(bound(rp, clip)) * recurrent_part(r, b, y, meta, d, h_row, 2, j);
                } else {
                    n += recurrent_part(r, b, y, meta, d, c_at + bi * hidden, 2, j);
                }
                y[y_at + unit] = (1.0 - z) * bound(n, clip).tanh() + z * h_prev;
            } else {
                let c_prev = y[c_at + unit];
                let mut pi = 0.0f32;
                let mut po = 0.0f32;
                let mut pf = 0.0f32;
                if meta[11] != 0 {
                    pi = p[d * 3 * hidden + j];
                    po = p[d * 3 * hidden + hidden + j];
                    pf = p[d * 3 * hidden + 2 * hidden + j];
                }
                let ip = input_part(x, w, b, meta, d, bi, t, 0, j)
                    + recurrent_part(r, b, y, meta, d, h_row, 0, j);
                let fp = input_part(x, w, b, meta, d, bi, t, 2, j)
                    + recurrent_part(r, b, y, meta, d, h_row, 2, j);
                let cp = input_part(x, w, b, meta, d, bi, t, 3, j)
                    + recurrent_part(r, b, y, meta, d, h_row, 3, j);
                let op = input_part(x, w, b, meta, d, bi, t, 1, j)
                    + recurrent_part(r, b, y, meta, d, h_row, 1, j);
                let i = sigmoid(bound(ip + pi * c_prev, clip));
                let f = sigmoid(bound(fp + pf * c_prev, clip));
                let c = f * c_prev + i * bound(cp, clip).tanh();
                let o = sigmoid(bound(op + po * c, clip));
                y[c_at + unit] = c;
                y[y_at + unit] = o * c.tanh();
            }
        } else {
            y[h_at + unit] = y[y_at + unit];
        }
    }
}
