//! Recurrent layers: ONNX `RNN`, `GRU` and `LSTM` with their default activations (Tanh; Sigmoid and
//! Tanh; Sigmoid, Tanh and Tanh), forward, reverse or bidirectional, over the whole sequence.
//!
//! Inputs, by position: `x` `[seq, batch, input]`, `w` `[dirs, gates * hidden, input]`, `r` `[dirs,
//! gates * hidden, hidden]`, and optionally `b` `[dirs, 2 * gates * hidden]` (`Wb` then `Rb`), `h0`
//! `[dirs, batch, hidden]`, `c0` (LSTM only, same dims) and `p` (LSTM peepholes, `[dirs, 3 * hidden]`,
//! present exactly when the cell says so). An absent `b`, `h0` or `c0` reads as zeros; one that comes
//! after a given input must be given (the converter writes zeros for it).
//!
//! The output is `[seq + 2, dirs, batch, hidden]`: rows `0..seq` are ONNX's `Y` (the hidden state at
//! each time step), row `seq` is `Y_h` (the last hidden state of each direction) and row `seq + 1` is
//! the LSTM's `Y_c`; for RNN and GRU that row is the kernel's working row (its values mean nothing).
//! The converter slices the outputs a model reads out of it.
//!
//! Why one kernel over the whole sequence, and why that layout: on a microcontroller the arena is the
//! memory that counts. The kernel needs no scratch at all: the running state lives in the output's
//! `Y_h` and `Y_c` rows, gates are computed one hidden unit at a time (a dot product of a weight row
//! with `x_t` and one with `h_{t-1}`, so no `gates * hidden` buffer), and the GRU's `r * h` vector
//! (the only whole-vector intermediate, with `linear_before_reset=0`) goes in the working row. The
//! weights are read in place from flash. An unrolled lowering into MatMul/Add/Sigmoid/Slice ops would
//! hold, per time step, the `gates * hidden` projections and every activation as arena tensors, and
//! its graph (and blob) grows with the sequence length; this kernel's arena is its inputs and output.

pub use crate::schema::nn::rnn::{RnnCell, RnnDirection, RnnParams};

use crate::ops::entry::{op_entry, out, shape_reason, OutDims};
use crate::ops::shape::{check_dims, dot, ensure};
use crate::ops::{In, Out};
use crate::workspace::Workspace;
use crate::Error;

/// Rows of the output besides the sequence: `Y_h`, then `Y_c` (or the working row).
pub const STATE_ROWS: usize = 2;

/// The output's dims for `x` `[seq, batch, input]` and `r` `[dirs, gates * hidden, hidden]`.
pub fn out_dims(x: &[usize], r: &[usize]) -> Option<[usize; 4]> {
    match (x, r) {
        (&[seq, batch, _], &[dirs, _, hidden]) => {
            Some([seq.checked_add(STATE_ROWS)?, dirs, batch, hidden])
        }
        _ => None,
    }
}

/// Checks every input's dims against `x` `[seq, batch, input]`, `r`'s hidden size and the cell, the
/// inputs the cell allows, and `y` `[seq + 2, dirs, batch, hidden]`.
pub fn validate(p: &RnnParams, dims: &[&[usize]], y: &[usize]) -> Result<(), Error> {
    ensure(dims.len() >= 3, "recurrent layer without its x, w and r inputs")?;
    let (x, w, r) = (dims[0], dims[1], dims[2]);
    check_dims(x)?;
    ensure(x.len() == 3, "recurrent layer input x is not [seq, batch, input]")?;
    ensure(r.len() == 3, "recurrent layer input r is not [dirs, gates * hidden, hidden]")?;
    let (gates, dirs, hidden) = (p.cell.gates(), p.direction.count(), r[2]);
    let rows = gates
        .checked_mul(hidden)
        .ok_or(crate::ops::shape::shape_error("recurrent layer size overflows"))?;
    ensure(
        r == [dirs, rows, hidden],
        "recurrent layer input r is not [dirs, gates * hidden, hidden] for its cell and direction",
    )?;
    ensure(
        w == [dirs, rows, x[2]],
        "recurrent layer input w is not [dirs, gates * hidden, input]",
    )?;
    let lstm = matches!(p.cell, RnnCell::Lstm { .. });
    let peepholes = matches!(p.cell, RnnCell::Lstm { peepholes: true });
    let most = if peepholes { 7 } else if lstm { 6 } else { 5 };
    ensure(
        dims.len() <= most && (!peepholes || dims.len() == 7),
        "recurrent layer with inputs its cell does not take (c0 and p are the LSTM's; p only with peepholes)",
    )?;
    if let Some(b) = dims.get(3) {
        ensure(*b == [dirs, 2 * rows], "recurrent layer bias is not [dirs, 2 * gates * hidden]")?;
    }
    for state in dims.iter().take(6).skip(4) {
        ensure(
            *state == [dirs, x[1], hidden],
            "recurrent layer initial state is not [dirs, batch, hidden]",
        )?;
    }
    if let Some(p) = dims.get(6) {
        ensure(*p == [dirs, 3 * hidden], "LSTM peepholes are not [dirs, 3 * hidden]")?;
    }
    ensure(
        out_dims(x, r).is_some_and(|d| d == y),
        "recurrent layer output is not [seq + 2, dirs, batch, hidden]",
    )
}

/// The logistic function.
#[inline]
fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + libm::expf(-v))
}

/// One direction's weights: `w` `[gates * hidden, input]`, `r` `[gates * hidden, hidden]`, `b` `[2 *
/// gates * hidden]`, `p` `[3 * hidden]`.
#[derive(Clone, Copy, Debug)]
pub struct CellWeights<'a> {
    /// Input weights.
    pub w: &'a [f32],
    /// Recurrence weights.
    pub r: &'a [f32],
    /// `Wb` then `Rb`, if any.
    pub b: Option<&'a [f32]>,
    /// LSTM peepholes `i, o, f`, if any.
    pub p: Option<&'a [f32]>,
}

impl CellWeights<'_> {
    /// `W_k x` for gate `k`, unit `j` (`hidden` units), plus the input bias.
    #[inline]
    fn wx(&self, k: usize, j: usize, hidden: usize, x: &[f32]) -> f32 {
        let row = k * hidden + j;
        let b = self.b.map_or(0.0, |b| b[row]);
        dot(&self.w[row * x.len()..][..x.len()], x) + b
    }

    /// `R_k h` for gate `k`, unit `j`, plus the recurrence bias.
    #[inline]
    fn rh(&self, k: usize, j: usize, h: &[f32]) -> f32 {
        let (hidden, row) = (h.len(), k * h.len() + j);
        let b = self.b.map_or(0.0, |b| b[b.len() / 2 + row]);
        dot(&self.r[row * hidden..][..hidden], h) + b
    }

    /// Peephole `k` (0: i, 1: o, 2: f) of unit `j`.
    #[inline]
    fn peep(&self, k: usize, j: usize, hidden: usize) -> f32 {
        self.p.map_or(0.0, |p| p[k * hidden + j])
    }
}

/// One time step of one batch row: `x` `[input]`, the previous hidden state `h` `[hidden]`, the cell
/// state (LSTM) or working row (GRU) `c` `[hidden]`, updated in place, and the new hidden state
/// written to `y` `[hidden]`. `clip` bounds every gate's pre-activation.
pub fn cell_step(
    cell: RnnCell,
    clip: f32,
    wt: &CellWeights<'_>,
    x: &[f32],
    h: &[f32],
    c: &mut [f32],
    y: &mut [f32],
) {
    let hidden = h.len();
    let clip = |v: f32| v.clamp(-clip, clip);
    match cell {
        RnnCell::Simple => {
            for (j, y) in y.iter_mut().enumerate() {
                *y = libm::tanhf(clip(wt.wx(0, j, hidden, x) + wt.rh(0, j, h)));
            }
        }
        RnnCell::Gru {
            linear_before_reset,
        } => {
            let z_of = |j| sigmoid(clip(wt.wx(0, j, hidden, x) + wt.rh(0, j, h)));
            let r_of = |j| sigmoid(clip(wt.wx(1, j, hidden, x) + wt.rh(1, j, h)));
            if linear_before_reset {
                for (j, y) in y.iter_mut().enumerate() {
                    let n = wt.wx(2, j, hidden, x) + r_of(j) * wt.rh(2, j, h);
                    let z = z_of(j);
                    *y = (1.0 - z) * libm::tanhf(clip(n)) + z * h[j];
                }
            } else {
                for (j, rh) in c.iter_mut().enumerate() {
                    *rh = r_of(j) * h[j];
                }
                for (j, y) in y.iter_mut().enumerate() {
                    let n = wt.wx(2, j, hidden, x) + wt.rh(2, j, c);
                    let z = z_of(j);
                    *y = (1.0 - z) * libm::tanhf(clip(n)) + z * h[j];
                }
            }
        }
        RnnCell::Lstm { .. } => {
            for (j, (y, c)) in y.iter_mut().zip(c.iter_mut()).enumerate() {
                let pre = |k| wt.wx(k, j, hidden, x) + wt.rh(k, j, h);
                let i = sigmoid(clip(pre(0) + wt.peep(0, j, hidden) * *c));
                let f = sigmoid(clip(pre(2) + wt.peep(2, j, hidden) * *c));
                let candidate = libm::tanhf(clip(pre(3)));
                *c = f * *c + i * candidate;
                let o = sigmoid(clip(pre(1) + wt.peep(1, j, hidden) * *c));
                *y = o * libm::tanhf(*c);
            }
        }
    }
}

/// Runs the layer over the whole sequence (inputs and output as the module doc lays them out).
#[allow(clippy::too_many_arguments)]
pub fn rnn(
    p: &RnnParams,
    x: In<'_>,
    w: In<'_>,
    r: In<'_>,
    b: Option<&[f32]>,
    h0: Option<&[f32]>,
    c0: Option<&[f32]>,
    peepholes: Option<&[f32]>,
    y: Out<'_>,
    _ws: Option<&mut Workspace<'_>>,
) {
    let step = Reference {
        cell: p.cell,
        clip: p.clip,
    };
    sequence(p, x, w, r, b, h0, c0, peepholes, y, step);
}

/// One time step of one batch row, for [`sequence`]: the arguments of [`cell_step`] after the cell and
/// the clip. A trait rather than a closure so that a vector kernel can mark its step
/// `#[inline(always)]`: a closure that is not inlined is compiled without its caller's target
/// features, and every vector instruction in it becomes a call.
pub trait Step {
    /// Called before each direction's steps, with its weights and the whole input `x` `[seq, batch,
    /// input]` (a kernel may compute what does not depend on the state here, for every step at once).
    fn begin(&mut self, _wt: &CellWeights<'_>, _x: In<'_>) {}

    /// Time step `t`, batch row `row`: updates `c` and writes the new hidden state to `y` from `x` (that
    /// step's input row), `h` and `c`.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        wt: &CellWeights<'_>,
        t: usize,
        row: usize,
        x: &[f32],
        h: &[f32],
        c: &mut [f32],
        y: &mut [f32],
    );
}

/// The reference's step: [`cell_step`].
struct Reference {
    cell: RnnCell,
    clip: f32,
}

impl Step for Reference {
    #[inline(always)]
    fn step(
        &mut self,
        wt: &CellWeights<'_>,
        _t: usize,
        _row: usize,
        x: &[f32],
        h: &[f32],
        c: &mut [f32],
        y: &mut [f32],
    ) {
        cell_step(self.cell, self.clip, wt, x, h, c, y);
    }
}

/// The layer's walk over directions, time steps and batch rows, with `step` for one step of one batch
/// row (the arguments of [`cell_step`] after the cell and clip): the initial states into the state rows,
/// the steps in time order (reversed for the reverse direction), each step's hidden state copied into
/// the `Y_h` row once every batch row has stepped. Shared by the reference and the vector kernels of
/// other crates, which bring their own [`Step`]. Inlined, so that the step compiles with the caller's
/// target features.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn sequence(
    p: &RnnParams,
    x: In<'_>,
    w: In<'_>,
    r: In<'_>,
    b: Option<&[f32]>,
    h0: Option<&[f32]>,
    c0: Option<&[f32]>,
    peepholes: Option<&[f32]>,
    y: Out<'_>,
    mut step: impl Step,
) {
    let (seq, batch, input) = (x.dims[0], x.dims[1], x.dims[2]);
    let (gates, dirs, hidden) = (p.cell.gates(), p.direction.count(), r.dims[2]);
    let rows = gates * hidden;
    let plane = batch * hidden;
    // Offset of `y[t, d, 0, 0]`.
    let at = |t: usize, d: usize| (t * dirs + d) * plane;
    for d in 0..dirs {
        let reverse = d == 1 || p.direction == RnnDirection::Reverse;
        let wt = CellWeights {
            w: &w.data[d * rows * input..][..rows * input],
            r: &r.data[d * rows * hidden..][..rows * hidden],
            b: b.map(|b| &b[d * 2 * rows..][..2 * rows]),
            p: peepholes.map(|p| &p[d * 3 * hidden..][..3 * hidden]),
        };
        step.begin(&wt, x);
        let (hs, cs) = (at(seq, d), at(seq + 1, d));
        for (state, init) in [(hs, h0), (cs, c0)] {
            let row = &mut y.data[state..][..plane];
            match init {
                Some(v) => row.copy_from_slice(&v[d * plane..][..plane]),
                None => row.fill(0.0),
            }
        }
        for i in 0..seq {
            let t = if reverse { seq - 1 - i } else { i };
            let xt = &x.data[t * batch * input..][..batch * input];
            let (steps, states) = y.data.split_at_mut(hs);
            let (h_rows, c_rows) = states.split_at_mut(cs - hs);
            let yt = &mut steps[at(t, d)..][..plane];
            for bi in 0..batch {
                step.step(
                    &wt,
                    t,
                    bi,
                    &xt[bi * input..][..input],
                    &h_rows[bi * hidden..][..hidden],
                    &mut c_rows[bi * hidden..][..hidden],
                    &mut yt[bi * hidden..][..hidden],
                );
            }
            h_rows[..plane].copy_from_slice(yt);
        }
    }
}

/// Signature of a recurrent-layer kernel (`x, w, r, b, h0, c0, p`, the output, and the workspace
/// with the scratch the table asked for, which the reference does not use).
pub type RnnFn = fn(
    &RnnParams,
    In<'_>,
    In<'_>,
    In<'_>,
    Option<&[f32]>,
    Option<&[f32]>,
    Option<&[f32]>,
    Option<&[f32]>,
    Out<'_>,
    Option<&mut Workspace<'_>>,
);

op_entry! {
    /// The [`Kernels::rnn`](crate::Kernels::rnn) entry, which runs
    /// [`OpKind::Rnn`](crate::OpKind::Rnn).
    Rnn: RnnFn = rnn, RnnParams, F32;
    validate |p, o| {
        let mut dims: heapless::Vec<&[usize], 7> = heapless::Vec::new();
        for k in 0..o.count().min(7) {
            // At most 7 pushed, the capacity.
            let _ = dims.push(o.dims(k));
        }
        if o.count() > 7 {
            return Err("recurrent layer with more than 7 inputs");
        }
        shape_reason(validate(p, &dims, o.out_dims()))
    };
    infer |_p, x| {
        let (Some(xd), Some(rd)) = (x.first(), x.get(2)) else {
            return Err("recurrent layer without its x, w and r inputs");
        };
        let dims = out_dims(xd, rd).ok_or("recurrent layer x or r is not of rank 3")?;
        OutDims::from_slice(&dims).map_err(|_| "rank above the format's limit")
    };
    run |kernel, p, a| kernel(
        p,
        a.x(0)?,
        a.x(1)?,
        a.x(2)?,
        a.opt(3)?,
        a.opt(4)?,
        a.opt(5)?,
        a.opt(6)?,
        out(a.y)?,
        a.ws,
    );
}

#[cfg(test)]
mod tests {
    use alloc::{vec, vec::Vec};

    use super::*;

    fn close(got: f32, want: f64) {
        assert!((f64::from(got) - want).abs() < 1e-6, "{got} != {want}");
    }

    /// One LSTM step, hidden 1, input 1, no bias: W = [wi, wo, wf, wc] = [0.5, 1, -0.5, 2],
    /// R = [0.1, 0.2, 0.3, 0.4], x = 1, h = 0.5, c = 0.25. Pre-activations: i 0.5 + 0.05 = 0.55,
    /// o 1.1, f -0.35, c 2.2; c' = s(-0.35) * 0.25 + s(0.55) * tanh(2.2) = 0.72209905,
    /// h' = s(1.1) * tanh(c') = 0.46381666 (s the logistic function).
    #[test]
    fn lstm_step_by_hand() {
        let wt = CellWeights {
            w: &[0.5, 1.0, -0.5, 2.0],
            r: &[0.1, 0.2, 0.3, 0.4],
            b: None,
            p: None,
        };
        let (mut c, mut y) = ([0.25], [0.0]);
        let cell = RnnCell::Lstm { peepholes: false };
        cell_step(cell, f32::INFINITY, &wt, &[1.0], &[0.5], &mut c, &mut y);
        close(c[0], 0.722_099_051_707_890_6);
        close(y[0], 0.463_816_664_470_045_2);
    }

    /// As above with peepholes P = [pi, po, pf] = [0.5, -1, 2]: i = s(0.55 + 0.5 * 0.25), f =
    /// s(-0.35 + 2 * 0.25) (both on the previous c), o = s(1.1 - c') on the new c' = 0.78090617;
    /// h' = 0.37828569.
    #[test]
    fn lstm_peepholes_by_hand() {
        let wt = CellWeights {
            w: &[0.5, 1.0, -0.5, 2.0],
            r: &[0.1, 0.2, 0.3, 0.4],
            b: None,
            p: Some(&[0.5, -1.0, 2.0]),
        };
        let (mut c, mut y) = ([0.25], [0.0]);
        let cell = RnnCell::Lstm { peepholes: true };
        cell_step(cell, f32::INFINITY, &wt, &[1.0], &[0.5], &mut c, &mut y);
        close(c[0], 0.780_906_166_763_464_5);
        close(y[0], 0.378_285_693_230_832_3);
    }

    /// One GRU step, hidden 1: W = [wz, wr, wh] = [0.5, -1, 1.5], R = [0.2, 0.4, -0.6], Wb = [0.1,
    /// 0.2, 0.3], Rb = [-0.1, 0.05, 0.25], x = 2, h = 0.5. z = s(1 + 0.1 + 0.1 - 0.1) = s(1.1),
    /// r = s(-2 + 0.2 + 0.2 + 0.05) = s(-1.55); with linear_before_reset = 0,
    /// n = tanh(3 - 0.6 * (r * 0.5) + 0.25 + 0.3), h' = (1 - z) n + z * 0.5 = 0.62441259; with 1,
    /// n = tanh(3 + r * (-0.6 * 0.5 + 0.25) + 0.3), h' = 0.62417943.
    #[test]
    fn gru_step_by_hand() {
        let b = [0.1, 0.2, 0.3, -0.1, 0.05, 0.25];
        let wt = CellWeights {
            w: &[0.5, -1.0, 1.5],
            r: &[0.2, 0.4, -0.6],
            b: Some(&b),
            p: None,
        };
        for (linear_before_reset, want) in [
            (false, 0.624_412_593_026_037_1),
            (true, 0.624_179_425_362_395_2),
        ] {
            let (mut work, mut y) = ([0.0], [0.0]);
            let cell = RnnCell::Gru {
                linear_before_reset,
            };
            cell_step(cell, f32::INFINITY, &wt, &[2.0], &[0.5], &mut work, &mut y);
            close(y[0], want);
        }
    }

    /// The plain RNN: tanh(0.5 * 2 + 0.2 * 0.5 + 0.1 - 0.1) = tanh(1.1); clipped at 0.3, tanh(0.3).
    #[test]
    fn simple_step_by_hand() {
        let wt = CellWeights {
            w: &[0.5],
            r: &[0.2],
            b: Some(&[0.1, -0.1]),
            p: None,
        };
        let (mut work, mut y) = ([0.0], [0.0]);
        cell_step(RnnCell::Simple, f32::INFINITY, &wt, &[2.0], &[0.5], &mut work, &mut y);
        close(y[0], 1.1f64.tanh());
        cell_step(RnnCell::Simple, 0.3, &wt, &[2.0], &[0.5], &mut work, &mut y);
        close(y[0], 0.3f64.tanh());
    }

    /// A bidirectional plain RNN over x = [1, 2] (w = 1, r = 0.5, both directions): forward h1 =
    /// tanh(1), h2 = tanh(2 + 0.5 h1); reverse g1 = tanh(2) first, then g0 = tanh(1 + 0.5 g1).
    /// Rows: Y[0] = [h1, g0], Y[1] = [h2, g1], Y_h = [h2, g0].
    #[test]
    fn bidirectional_sequence_layout() {
        let p = RnnParams {
            cell: RnnCell::Simple,
            direction: RnnDirection::Bidirectional,
            clip: f32::INFINITY,
        };
        let (xd, wd, yd) = ([2, 1, 1], [2, 1, 1], [4, 2, 1, 1]);
        let dims: [&[usize]; 3] = [&xd, &wd, &wd];
        validate(&p, &dims, &yd).unwrap();
        let mut y = vec![0.0f32; 8];
        let x = In { data: &[1.0, 2.0], dims: &xd };
        let w = In { data: &[1.0, 1.0], dims: &wd };
        let r = In { data: &[0.5, 0.5], dims: &wd };
        rnn(&p, x, w, r, None, None, None, None, Out { data: &mut y, dims: &yd }, None);
        let h1 = 1f64.tanh();
        let h2 = (2.0 + 0.5 * h1).tanh();
        let g1 = 2f64.tanh();
        let g0 = (1.0 + 0.5 * g1).tanh();
        let want = [h1, g0, h2, g1, h2, g0];
        for (&got, want) in y.iter().zip(want) {
            close(got, want);
        }
    }

    /// Initial states are copied into the state rows; a sequence of length 0 gives them back.
    #[test]
    fn empty_sequence_returns_the_initial_state() {
        let p = RnnParams {
            cell: RnnCell::Lstm { peepholes: false },
            direction: RnnDirection::Forward,
            clip: f32::INFINITY,
        };
        let (xd, wd, bd, sd, yd) = ([0, 1, 1], [1, 4, 1], [1, 8], [1, 1, 1], [2, 1, 1, 1]);
        let dims: [&[usize]; 6] = [&xd, &wd, &wd, &bd, &sd, &sd];
        validate(&p, &dims, &yd).unwrap();
        let mut y: Vec<f32> = vec![0.0; 2];
        let x = In { data: &[], dims: &xd };
        let w = In { data: &[0.0; 4], dims: &wd };
        let r = In { data: &[0.0; 4], dims: &wd };
        let b = [0.0; 8];
        let out = Out { data: &mut y, dims: &yd };
        rnn(&p, x, w, r, Some(&b), Some(&[3.0]), Some(&[-4.0]), None, out, None);
        assert_eq!(y, [3.0, -4.0]);
    }

    #[test]
    fn validate_names_what_is_wrong() {
        let p = RnnParams {
            cell: RnnCell::Gru {
                linear_before_reset: false,
            },
            direction: RnnDirection::Forward,
            clip: f32::INFINITY,
        };
        let (xd, wd, rd, yd) = ([3, 2, 4], [1, 15, 4], [1, 15, 5], [5, 1, 2, 5]);
        validate(&p, &[&xd, &wd, &rd], &yd).unwrap();
        let bad_r = [1, 12, 5];
        let e = validate(&p, &[&xd, &wd, &bad_r], &yd).unwrap_err();
        assert!(alloc::format!("{e}").contains("input r"), "{e}");
        let c0 = [1, 2, 5];
        let e = validate(&p, &[&xd, &wd, &rd, &[1, 30], &c0, &c0], &yd).unwrap_err();
        assert!(alloc::format!("{e}").contains("LSTM"), "{e}");
        let e = validate(&p, &[&xd, &wd, &rd], &[3, 1, 2, 5]).unwrap_err();
        assert!(alloc::format!("{e}").contains("output"), "{e}");
    }
}
