//! Recurrent layers (ONNX `RNN`, `GRU`, `LSTM`) on vectors. The walk over directions, time steps and
//! batch rows, the output's layout and the state rows are the reference's own
//! ([`ember_core::ops::nn::rnn::sequence`]); this file brings the step of one batch row.
//!
//! A step takes `UNITS` hidden units at a time, and their gates live on the stack. For each gate, the
//! dot products of the block's weight rows with `x_t` and with `h_{t-1}` run eight rows at a time,
//! vectorized along the row, then the block's activations are the vector sigmoid and tanh of
//! [`crate::simd::math`]. With the scratch the table asks for (one direction's input projections,
//! `seq * batch * gates * hidden` values), the products with `x_t` are computed for every step before
//! the recurrence, a group of weight rows at a time against every input row, so that `W` is read once
//! per direction instead of once per step; without it, the kernel runs as the reference does, with no
//! scratch. Both paths give the same bits. The sums run in another order than the reference's and use
//! FMA where the level has it, so the results differ from the reference's in the last bits
//! (`tests/nn_vs_reference.rs` bounds them).

// The kernel's signature is the table entry's: the parameters, ONNX's seven inputs and the output.
#![allow(clippy::too_many_arguments)]

use ember_core::ops::nn::rnn::{sequence, CellWeights, RnnCell, RnnParams, Step};
use ember_core::ops::{In, Out};
use ember_core::Workspace;

use crate::scratch::{bytes_for, Carve};
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
        ws: Option<&mut Workspace<'_>>,
    ) => rnn_on;
}

/// Scratch bytes the kernel asks for, for `x` `[seq, batch, input]` and `r` `[dirs, rows, hidden]`:
/// one direction's input projections, `[seq * batch, rows]` (0 when the dims are not those).
pub(crate) fn scratch_bytes(x: &[usize], r: &[usize]) -> usize {
    match (x, r) {
        (&[seq, batch, _], &[_, rows, _]) => seq
            .checked_mul(batch)
            .and_then(|m| m.checked_mul(rows))
            .map_or(0, |n| bytes_for(&[n])),
        _ => 0,
    }
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
    ws: Option<&mut Workspace<'_>>,
) {
    let (batch, rows) = (x.dims[1], r.dims[1]);
    let len = x.dims[0] * batch * rows;
    let projected = ws
        .and_then(|ws| Carve::new(ws.scratch).take_all([len]))
        .map(|[buf]| buf);
    let vector = Vector {
        s,
        cell: p.cell,
        clip: p.clip,
        batch,
        rows,
        projected,
    };
    sequence(p, x, w, r, b, h0, c0, peepholes, y, vector);
}

/// The vector step at level `S`, with the input projections of every step of the direction when the
/// scratch holds them.
struct Vector<'a, S> {
    s: S,
    cell: RnnCell,
    clip: f32,
    batch: usize,
    rows: usize,
    /// `[seq * batch, rows]`: `W x_t + Wb` for each step and batch row, filled by `begin`.
    projected: Option<&'a mut [f32]>,
}

impl<S: Simd> Step for Vector<'_, S> {
    #[inline(always)]
    fn begin(&mut self, wt: &CellWeights<'_>, x: In<'_>) {
        if let Some(out) = self.projected.as_deref_mut() {
            project_all(self.s, wt, x, self.rows, out);
        }
    }

    #[inline(always)]
    fn step(
        &mut self,
        wt: &CellWeights<'_>,
        t: usize,
        row: usize,
        x: &[f32],
        h: &[f32],
        c: &mut [f32],
        y: &mut [f32],
    ) {
        let rows = self.rows;
        let pre = self
            .projected
            .as_deref()
            .map(|p| &p[(t * self.batch + row) * rows..][..rows]);
        step(self.s, self.cell, self.clip, wt, pre, x, h, c, y);
    }
}

/// `W x_t + Wb` for every step and batch row of `x` `[seq, batch, input]` into `out` `[seq * batch,
/// rows]`: a group of eight (then four, then one) weight rows at a time against every input row, so
/// that the group stays in L1 while the inputs pass, where the step reads all of `W` once per step.
/// Each value is computed as [`Gates::wx`] computes it (the same dot product, then the bias), so the
/// two paths give the same bits.
#[inline(always)]
fn project_all<S: Simd>(s: S, wt: &CellWeights<'_>, x: In<'_>, rows: usize, out: &mut [f32]) {
    let input = x.dims[2];
    let m = x.dims[0] * x.dims[1];
    let mut i = 0;
    while i < rows {
        let left = rows - i;
        i += if left >= 8 {
            project_group::<S, 8>(s, wt, x.data, input, m, rows, i, out)
        } else if left >= 4 {
            project_group::<S, 4>(s, wt, x.data, input, m, rows, i, out)
        } else {
            project_group::<S, 1>(s, wt, x.data, input, m, rows, i, out)
        };
    }
}

/// Rows `first..first + R` of [`project_all`]; returns `R`.
#[inline(always)]
fn project_group<S: Simd, const R: usize>(
    s: S,
    wt: &CellWeights<'_>,
    x: &[f32],
    input: usize,
    m: usize,
    rows: usize,
    first: usize,
    out: &mut [f32],
) -> usize {
    let w = &wt.w[first * input..][..R * input];
    for t in 0..m {
        let sums = dots::<S, R>(s, w, &x[t * input..][..input]);
        let o = &mut out[t * rows + first..][..R];
        for (i, (o, sum)) in o.iter_mut().zip(sums).enumerate() {
            *o = sum + wt.b.map_or(0.0, |b| b[first + i]);
        }
    }
    R
}

/// One time step of one batch row, as [`ember_core::ops::nn::rnn::cell_step`] defines it.
#[inline(always)]
fn step<S: Simd>(
    s: S,
    cell: RnnCell,
    clip: f32,
    wt: &CellWeights<'_>,
    pre: Option<&[f32]>,
    x: &[f32],
    h: &[f32],
    c: &mut [f32],
    y: &mut [f32],
) {
    let hidden = h.len();
    let (lo, hi) = (s.splat(-clip), s.splat(clip));
    let one = s.splat(1.0);
    // Every helper below that holds vector code is an `#[inline(always)]` function, not a closure: a
    // closure called from several places is compiled on its own, without the level's features.
    let g = Gates { wt, hidden, x, pre };
    let blocks = (0..hidden)
        .step_by(UNITS)
        .map(|j| (j, UNITS.min(hidden - j)));
    match cell {
        RnnCell::Simple => {
            for (j, n) in blocks {
                let (mut gx, mut gh) = ([0.0; UNITS], [0.0; UNITS]);
                g.wx(s, 0, j, n, &mut gx);
                g.rv(s, 0, j, n, h, &mut gh);
                let mut out = [0.0; UNITS];
                for v in (0..UNITS).step_by(S::LANES) {
                    let pre = s.add(at(s, &gx, v), at(s, &gh, v));
                    store_part(s, &mut out[v..], tanh(s, clamp(s, lo, hi, pre)));
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
                    g.wx(s, 1, j, n, &mut gx);
                    g.rv(s, 1, j, n, h, &mut gh);
                    let mut hj = [0.0; UNITS];
                    hj[..n].copy_from_slice(&h[j..][..n]);
                    let mut out = [0.0; UNITS];
                    for v in (0..UNITS).step_by(S::LANES) {
                        let rg = sigmoid(s, clamp(s, lo, hi, s.add(at(s, &gx, v), at(s, &gh, v))));
                        store_part(s, &mut out[v..], s.mul(rg, at(s, &hj, v)));
                    }
                    c[j..][..n].copy_from_slice(&out[..n]);
                }
            }
            for (j, n) in blocks {
                let mut pre: [[Block; 2]; 3] = [[[0.0; UNITS]; 2]; 3];
                for (k, [gx, gh]) in pre.iter_mut().enumerate() {
                    g.wx(s, k, j, n, gx);
                    // The candidate's recurrence reads `r * h` (in `c`) unless linear before reset.
                    let v = if k == 2 && !linear_before_reset {
                        &*c
                    } else {
                        h
                    };
                    g.rv(s, k, j, n, v, gh);
                }
                let mut hj = [0.0; UNITS];
                hj[..n].copy_from_slice(&h[j..][..n]);
                let mut out = [0.0; UNITS];
                for v in (0..UNITS).step_by(S::LANES) {
                    let z = sigmoid(
                        s,
                        clamp(s, lo, hi, s.add(at(s, &pre[0][0], v), at(s, &pre[0][1], v))),
                    );
                    let cand = if linear_before_reset {
                        let rg = sigmoid(
                            s,
                            clamp(s, lo, hi, s.add(at(s, &pre[1][0], v), at(s, &pre[1][1], v))),
                        );
                        s.add(at(s, &pre[2][0], v), s.mul(rg, at(s, &pre[2][1], v)))
                    } else {
                        s.add(at(s, &pre[2][0], v), at(s, &pre[2][1], v))
                    };
                    let hv = at(s, &hj, v);
                    let new = s.add(
                        s.mul(s.sub(one, z), tanh(s, clamp(s, lo, hi, cand))),
                        s.mul(z, hv),
                    );
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
                    g.wx(s, k, j, n, pk);
                    g.rv(s, k, j, n, h, &mut gh);
                    for (a, b) in pk.iter_mut().zip(gh) {
                        *a += b;
                    }
                }
                let (pi, po, pf) = (g.peep(0, j, n), g.peep(1, j, n), g.peep(2, j, n));
                let mut cj = [0.0; UNITS];
                cj[..n].copy_from_slice(&c[j..][..n]);
                let (mut c_out, mut h_out) = ([0.0; UNITS], [0.0; UNITS]);
                for v in (0..UNITS).step_by(S::LANES) {
                    let cv = at(s, &cj, v);
                    let i = sigmoid(
                        s,
                        clamp(
                            s,
                            lo,
                            hi,
                            s.add(at(s, &pre[0], v), s.mul(at(s, &pi, v), cv)),
                        ),
                    );
                    let f = sigmoid(
                        s,
                        clamp(
                            s,
                            lo,
                            hi,
                            s.add(at(s, &pre[2], v), s.mul(at(s, &pf, v), cv)),
                        ),
                    );
                    let cand = tanh(s, clamp(s, lo, hi, at(s, &pre[3], v)));
                    let cn = s.add(s.mul(f, cv), s.mul(i, cand));
                    let o = sigmoid(
                        s,
                        clamp(
                            s,
                            lo,
                            hi,
                            s.add(at(s, &pre[1], v), s.mul(at(s, &po, v), cn)),
                        ),
                    );
                    store_part(s, &mut c_out[v..], cn);
                    store_part(s, &mut h_out[v..], s.mul(o, tanh(s, cn)));
                }
                c[j..][..n].copy_from_slice(&c_out[..n]);
                y[j..][..n].copy_from_slice(&h_out[..n]);
            }
        }
    }
}

/// One direction's weights, for the gates of a block of units.
struct Gates<'a, 'w> {
    wt: &'a CellWeights<'w>,
    hidden: usize,
    x: &'a [f32],
    /// This step's `W x + Wb`, all rows, when [`project_all`] computed them.
    pre: Option<&'a [f32]>,
}

impl Gates<'_, '_> {
    /// `W_k x + Wb_k` of gate `k` over units `j..j + n`.
    #[inline(always)]
    fn wx<S: Simd>(&self, s: S, k: usize, j: usize, n: usize, out: &mut Block) {
        let (row, input) = (k * self.hidden + j, self.x.len());
        if let Some(pre) = self.pre {
            out[..n].copy_from_slice(&pre[row..][..n]);
            return;
        }
        let bias = self.wt.b.map(|b| &b[row..][..n]);
        project(
            s,
            &self.wt.w[row * input..][..n * input],
            n,
            self.x,
            bias,
            out,
        );
    }

    /// `R_k v + Rb_k` of gate `k` over units `j..j + n` (`v`: the hidden state, or the GRU's `r * h`).
    #[inline(always)]
    fn rv<S: Simd>(&self, s: S, k: usize, j: usize, n: usize, v: &[f32], out: &mut Block) {
        let (row, hidden) = (k * self.hidden + j, self.hidden);
        let bias = self.wt.b.map(|b| &b[b.len() / 2 + row..][..n]);
        project(s, &self.wt.r[row * hidden..][..n * hidden], n, v, bias, out);
    }

    /// Peephole `k` (0: i, 1: o, 2: f) of units `j..j + n`, zeros without peepholes.
    #[inline(always)]
    fn peep(&self, k: usize, j: usize, n: usize) -> Block {
        let mut out = [0.0; UNITS];
        if let Some(p) = self.wt.p {
            out[..n].copy_from_slice(&p[k * self.hidden + j..][..n]);
        }
        out
    }
}

/// Lanes `v..v + LANES` of a block.
#[inline(always)]
fn at<S: Simd>(s: S, blk: &Block, v: usize) -> S::V {
    load_part(s, &blk[v..], 0.0)
}

/// The reference's `clamp` to `[lo, hi]`: NaN passes.
#[inline(always)]
fn clamp<S: Simd>(s: S, lo: S::V, hi: S::V, v: S::V) -> S::V {
    s.min(hi, s.max(lo, v))
}

/// `out[i] = dot(rows[i], v) + bias[i]` for the `n` rows of `rows` (`n <= UNITS`, `n * v.len()`
/// values): eight rows at a time (eight independent accumulators keep the FMA units busy; 5-9% over
/// four on hey-mycroft), then four, then one.
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
    while i + 8 <= n {
        let sums = dots::<S, 8>(s, &rows[i * k..][..8 * k], v);
        for (t, sum) in sums.into_iter().enumerate() {
            out[i + t] = sum + bias.map_or(0.0, |b| b[i + t]);
        }
        i += 8;
    }
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
    assert!(rows.len() >= R * k, "dots: {R} rows of {k} values");
    let mut acc = [s.splat(0.0); R];
    let mut kk = 0;
    while kk < full {
        // SAFETY: `kk + LANES <= full <= k`, so the vector of `v` at `kk` and the one of row `r` at
        // `r * k + kk` (ending at or before `(r + 1) * k <= R * k <= rows.len()`, asserted above) are
        // in bounds. A bounds-checked load per vector measured slower on this loop, which the kernel's
        // time is.
        unsafe {
            let xv = s.load(v.as_ptr().add(kk));
            for (r, a) in acc.iter_mut().enumerate() {
                *a = s.mul_add(xv, s.load(rows.as_ptr().add(r * k + kk)), *a);
            }
        }
        kk += S::LANES;
    }
    let mut sums = [0.0; R];
    for (r, (sum, a)) in sums.iter_mut().zip(acc).enumerate() {
        *sum = s.sum(a);
        for (w, x) in rows[r * k + full..][..k - full].iter().zip(&v[full..]) {
            *sum += w * x;
        }
    }
    sums
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use std::vec;
    use std::vec::Vec;

    use ember_core::ops::nn::rnn::{out_dims, RnnCell, RnnDirection, RnnFn, RnnParams};
    use ember_core::ops::{In, Out};
    use ember_core::Workspace;

    use crate::Isa;

    /// This architecture's kernels and their levels.
    fn kernels() -> Vec<(Isa, RnnFn)> {
        #[cfg(target_arch = "x86_64")]
        let all: Vec<(Isa, RnnFn)> =
            vec![(Isa::Sse2, super::sse2::rnn), (Isa::Avx2, super::avx2::rnn)];
        #[cfg(target_arch = "aarch64")]
        let all: Vec<(Isa, RnnFn)> = vec![(Isa::Neon, super::neon::rnn)];
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let all: Vec<(Isa, RnnFn)> = Vec::new();
        all.into_iter()
            .filter(|(isa, _)| isa.is_supported())
            .collect()
    }

    /// A small layer of each cell, both directions, with sizes that leave a tail in the lanes (input
    /// 11), in the eight- and four-row groups (hidden 13) and in the blocks of units, at every level
    /// this CPU runs, against the reference (small enough for Miri, which checks the unchecked loads).
    #[test]
    fn every_cell_matches_the_reference_at_every_level() {
        let (seq, batch, input, hidden) = (2, 1, 11, 13);
        let cells = [
            RnnCell::Simple,
            RnnCell::Gru {
                linear_before_reset: false,
            },
            RnnCell::Gru {
                linear_before_reset: true,
            },
            RnnCell::Lstm { peepholes: true },
        ];
        // Deterministic values in [-1, 1).
        let values = |n: usize, seed: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 37 + seed * 101) % 200) as f32 / 100.0 - 1.0)
                .collect()
        };
        for cell in cells {
            let p = RnnParams {
                cell,
                direction: RnnDirection::Bidirectional,
                clip: f32::INFINITY,
            };
            let rows = cell.gates() * hidden;
            let (xd, wd, rd) = ([seq, batch, input], [2, rows, input], [2, rows, hidden]);
            let yd = out_dims(&xd, &rd).unwrap();
            let (x, w, r) = (
                values(seq * batch * input, 1),
                values(2 * rows * input, 2),
                values(2 * rows * hidden, 3),
            );
            let (b, h0) = (values(4 * rows, 4), values(2 * batch * hidden, 5));
            let (c0, peep) = (values(2 * batch * hidden, 6), values(6 * hidden, 7));
            let lstm = matches!(cell, RnnCell::Lstm { .. });
            let run = |kernel: RnnFn, scratch: bool| {
                let mut y = vec![0.0f32; yd.iter().product()];
                let mut bytes = vec![0u128; super::scratch_bytes(&xd, &rd).div_ceil(16)];
                let mut ws = Workspace::new(bytemuck::cast_slice_mut(&mut bytes), None);
                kernel(
                    &p,
                    In {
                        data: &x,
                        dims: &xd,
                    },
                    In {
                        data: &w,
                        dims: &wd,
                    },
                    In {
                        data: &r,
                        dims: &rd,
                    },
                    Some(&b),
                    Some(&h0),
                    lstm.then_some(&c0[..]),
                    lstm.then_some(&peep[..]),
                    Out {
                        data: &mut y,
                        dims: &yd,
                    },
                    scratch.then_some(&mut ws),
                );
                y
            };
            let want = run(ember_core::ops::nn::rnn::rnn, false);
            for (isa, kernel) in kernels() {
                let got = run(kernel, false);
                // The message is formatted only on failure: under Miri formatting each element's
                // floats took a third of this test's time.
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 2e-5 * w.abs().max(1.0),
                        "{isa} {cell:?} element {i}: {g} against {w}"
                    );
                }
                // With the scratch for the input projections: the same bits.
                let projected = run(kernel, true);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&projected), bits(&got), "{isa} {cell:?} with scratch");
            }
        }
    }
}
