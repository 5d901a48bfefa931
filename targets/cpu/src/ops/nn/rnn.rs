//! Recurrent layers (ONNX `RNN`, `GRU`, `LSTM`) on vectors. The walk over directions, time steps and
//! batch rows, the output's layout and the state rows are the reference's own
//! ([`ember_core::ops::nn::rnn::sequence`]); this file brings the step of one batch row.
//!
//! Like the reference it needs no scratch: a step takes `UNITS` hidden units at a time, and their gates
//! live on the stack. For each gate, the dot products of the block's weight rows with `x_t` and with
//! `h_{t-1}` run four rows at a time, vectorized along the row (each weight is read once per step,
//! where the reference reads it once per unit too but a lane at a time), then the block's activations
//! are the vector sigmoid and tanh of [`crate::simd::math`]. The sums run in another order than the
//! reference's and use FMA where the level has it, so the results differ from the reference's in the
//! last bits (`tests/nn_vs_reference.rs` bounds them).

// The kernel's signature is the table entry's: the parameters, ONNX's seven inputs and the output.
#![allow(clippy::too_many_arguments)]

use ember_core::ops::nn::rnn::{sequence, CellWeights, RnnCell, RnnParams};
use ember_core::ops::{In, Out};

use crate::simd::math::{sigmoid, tanh};
use crate::simd::{load_part, per_level, store_part, Simd};

per_level! {
    simd:
    fn rnn(
        p: &RnnParams,
        x: In<'_>,
        w: In<'_>,
        r: In<'_>,
        b: Option<&[f32]>,
        h0: Option<&[f32]>,
        c0: Option<&[f32]>,
        peepholes: Option<&[f32]>,
        y: Out<'_>,
    ) => rnn_on;
}

/// Hidden units per block: a multiple of every level's lanes.
const UNITS: usize = 16;

/// One gate's pre-activations of a block (`UNITS` values; past the block's end, zeros).
type Block = [f32; UNITS];

#[inline(always)]
fn rnn_on<S: Simd>(
    s: S,
    p: &RnnParams,
    x: In<'_>,
    w: In<'_>,
    r: In<'_>,
    b: Option<&[f32]>,
    h0: Option<&[f32]>,
    c0: Option<&[f32]>,
    peepholes: Option<&[f32]>,
    y: Out<'_>,
) {
    let (cell, clip) = (p.cell, p.clip);
    sequence(p, x, w, r, b, h0, c0, peepholes, y, |wt, x, h, c, y| {
        step(s, cell, clip, wt, x, h, c, y);
    });
}

/// One time step of one batch row, as [`ember_core::ops::nn::rnn::cell_step`] defines it.
#[inline(always)]
fn step<S: Simd>(
    s: S,
    cell: RnnCell,
    clip: f32,
    wt: &CellWeights<'_>,
    x: &[f32],
    h: &[f32],
    c: &mut [f32],
    y: &mut [f32],
) {
    let hidden = h.len();
    let (lo, hi) = (s.splat(-clip), s.splat(clip));
    // The reference's `clamp`: NaN passes.
    let clip = |v| s.min(hi, s.max(lo, v));
    let one = s.splat(1.0);
    // `W_k x + Wb_k` and `R_k v + Rb_k` of gate `k` over units `j..j + n`.
    let wx = |k: usize, j: usize, n: usize, out: &mut Block| {
        let row = k * hidden + j;
        let bias = wt.b.map(|b| &b[row..][..n]);
        project(s, &wt.w[row * x.len()..][..n * x.len()], n, x, bias, out);
    };
    let rv = |k: usize, j: usize, n: usize, v: &[f32], out: &mut Block| {
        let row = k * hidden + j;
        let bias = wt.b.map(|b| &b[b.len() / 2 + row..][..n]);
        project(s, &wt.r[row * hidden..][..n * hidden], n, v, bias, out);
    };
    let peep = |k: usize, j: usize, n: usize| {
        let mut out = [0.0; UNITS];
        if let Some(p) = wt.p {
            out[..n].copy_from_slice(&p[k * hidden + j..][..n]);
        }
        out
    };
    // Lane `v..v + LANES` of a block.
    let at = |blk: &Block, v: usize| load_part(s, &blk[v..], 0.0);
    let blocks = (0..hidden)
        .step_by(UNITS)
        .map(|j| (j, UNITS.min(hidden - j)));
    match cell {
        RnnCell::Simple => {
            for (j, n) in blocks {
                let (mut gx, mut gh) = ([0.0; UNITS], [0.0; UNITS]);
                wx(0, j, n, &mut gx);
                rv(0, j, n, h, &mut gh);
                let mut out = [0.0; UNITS];
                for v in (0..UNITS).step_by(S::LANES) {
                    let pre = s.add(at(&gx, v), at(&gh, v));
                    store_part(s, &mut out[v..], tanh(s, clip(pre)));
                }
                y[j..][..n].copy_from_slice(&out[..n]);
            }
        }
        RnnCell::Gru {
            linear_before_reset,
        } => {
            // Without `linear_before_reset`, the candidate reads `r * h` over every unit: a first pass
            // writes it to the working row `c`, as the reference does.
            if !linear_before_reset {
                for (j, n) in blocks.clone() {
                    let (mut gx, mut gh) = ([0.0; UNITS], [0.0; UNITS]);
                    wx(1, j, n, &mut gx);
                    rv(1, j, n, h, &mut gh);
                    let mut hj = [0.0; UNITS];
                    hj[..n].copy_from_slice(&h[j..][..n]);
                    let mut out = [0.0; UNITS];
                    for v in (0..UNITS).step_by(S::LANES) {
                        let rg = sigmoid(s, clip(s.add(at(&gx, v), at(&gh, v))));
                        store_part(s, &mut out[v..], s.mul(rg, at(&hj, v)));
                    }
                    c[j..][..n].copy_from_slice(&out[..n]);
                }
            }
            for (j, n) in blocks {
                let mut g: [[Block; 2]; 3] = [[[0.0; UNITS]; 2]; 3];
                for (k, [gx, gh]) in g.iter_mut().enumerate() {
                    wx(k, j, n, gx);
                    // The candidate's recurrence reads `r * h` (in `c`) unless linear before reset.
                    let v = if k == 2 && !linear_before_reset {
                        &*c
                    } else {
                        h
                    };
                    rv(k, j, n, v, gh);
                }
                let mut hj = [0.0; UNITS];
                hj[..n].copy_from_slice(&h[j..][..n]);
                let mut out = [0.0; UNITS];
                for v in (0..UNITS).step_by(S::LANES) {
                    let z = sigmoid(s, clip(s.add(at(&g[0][0], v), at(&g[0][1], v))));
                    let cand = if linear_before_reset {
                        let rg = sigmoid(s, clip(s.add(at(&g[1][0], v), at(&g[1][1], v))));
                        s.add(at(&g[2][0], v), s.mul(rg, at(&g[2][1], v)))
                    } else {
                        s.add(at(&g[2][0], v), at(&g[2][1], v))
                    };
                    let hv = at(&hj, v);
                    let new = s.add(s.mul(s.sub(one, z), tanh(s, clip(cand))), s.mul(z, hv));
                    store_part(s, &mut out[v..], new);
                }
                y[j..][..n].copy_from_slice(&out[..n]);
            }
        }
        RnnCell::Lstm { .. } => {
            for (j, n) in blocks {
                // Gates in ONNX's order: input, output, forget, cell.
                let mut pre: [Block; 4] = [[0.0; UNITS]; 4];
                for (k, pk) in pre.iter_mut().enumerate() {
                    let mut gh = [0.0; UNITS];
                    wx(k, j, n, pk);
                    rv(k, j, n, h, &mut gh);
                    for (a, b) in pk.iter_mut().zip(gh) {
                        *a += b;
                    }
                }
                let (pi, po, pf) = (peep(0, j, n), peep(1, j, n), peep(2, j, n));
                let mut cj = [0.0; UNITS];
                cj[..n].copy_from_slice(&c[j..][..n]);
                let (mut c_out, mut h_out) = ([0.0; UNITS], [0.0; UNITS]);
                for v in (0..UNITS).step_by(S::LANES) {
                    let cv = at(&cj, v);
                    let i = sigmoid(s, clip(s.add(at(&pre[0], v), s.mul(at(&pi, v), cv))));
                    let f = sigmoid(s, clip(s.add(at(&pre[2], v), s.mul(at(&pf, v), cv))));
                    let cand = tanh(s, clip(at(&pre[3], v)));
                    let cn = s.add(s.mul(f, cv), s.mul(i, cand));
                    let o = sigmoid(s, clip(s.add(at(&pre[1], v), s.mul(at(&po, v), cn))));
                    store_part(s, &mut c_out[v..], cn);
                    store_part(s, &mut h_out[v..], s.mul(o, tanh(s, cn)));
                }
                c[j..][..n].copy_from_slice(&c_out[..n]);
                y[j..][..n].copy_from_slice(&h_out[..n]);
            }
        }
    }
}

/// `out[i] = dot(rows[i], v) + bias[i]` for the `n` rows of `rows` (`n <= UNITS`, `n * v.len()`
/// values): four rows at a time, each with one vector accumulator along the row.
#[inline(always)]
fn project<S: Simd>(
    s: S,
    rows: &[f32],
    n: usize,
    v: &[f32],
    bias: Option<&[f32]>,
    out: &mut Block,
) {
    let k = v.len();
    let mut i = 0;
    while i + 4 <= n {
        let sums = dots::<S, 4>(s, &rows[i * k..][..4 * k], v);
        for (t, sum) in sums.into_iter().enumerate() {
            out[i + t] = sum + bias.map_or(0.0, |b| b[i + t]);
        }
        i += 4;
    }
    while i < n {
        let [sum] = dots::<S, 1>(s, &rows[i * k..][..k], v);
        out[i] = sum + bias.map_or(0.0, |b| b[i]);
        i += 1;
    }
}

/// The dot products of `v` with the `R` rows of `rows` (`R * v.len()` values).
#[inline(always)]
fn dots<S: Simd, const R: usize>(s: S, rows: &[f32], v: &[f32]) -> [f32; R] {
    let k = v.len();
    let full = k - k % S::LANES;
    let mut acc = [s.splat(0.0); R];
    let mut kk = 0;
    while kk < full {
        let xv = load_part(s, &v[kk..], 0.0);
        for (r, a) in acc.iter_mut().enumerate() {
            *a = s.mul_add(xv, load_part(s, &rows[r * k + kk..], 0.0), *a);
        }
        kk += S::LANES;
    }
    core::array::from_fn(|r| {
        let row = &rows[r * k..][..k];
        s.sum(acc[r])
            + row[full..]
                .iter()
                .zip(&v[full..])
                .map(|(a, b)| a * b)
                .sum::<f32>()
    })
}
