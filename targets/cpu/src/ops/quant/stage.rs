//! The output stage of the int8 layers laid out for SIMD: per output channel a bias, a multiplier and a
//! shift, each in its own array (so that a vector of channels loads each with one instruction), and
//! the scalar finish that every level uses for odd requantization rows and leftover channels.
//!
//! Each level vectorizes the finish itself (`x86::avx2::requant`, `arm::requant`); they all compute
//! what [`Stage::finish`] computes, which is the reference's `requantize_acc` after adding the bias.

use ember_core::ops::quant::conv::QuantConv2dParams;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
use ember_core::ops::quant::requant::{clamp_to_i8, RequantRounding, MAX_SHIFT, MIN_SHIFT};

/// The output stage of a layer, from one output channel on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stage<'a> {
    /// Added to the accumulator (wrapping): the layer's bias, and `-x_zero_point * sum(w)` where the
    /// level folds the input zero point into it.
    pub bias: &'a [i32],
    /// Q31 multipliers.
    pub mult: &'a [i32],
    /// Shifts (`multiplier * 2^(shift - 31)`).
    pub shift: &'a [i32],
    /// Rounding mode.
    pub rounding: RequantRounding,
    /// Output zero point.
    pub y_zero_point: i8,
    /// Lower clamp, applied first.
    pub act_min: i8,
    /// Upper clamp.
    pub act_max: i8,
    /// Every `(multiplier, shift)` row is valid (`multiplier >= 0`, shift in `MIN_SHIFT..=MAX_SHIFT`):
    /// the vector finishes, exact on that range only, may run. Otherwise levels use [`Stage::finish`].
    pub simd: bool,
}

impl<'a> Stage<'a> {
    /// The stage from channel `c` on.
    pub fn skip(self, c: usize) -> Stage<'a> {
        let from = |a: &'a [i32]| a.get(c..).unwrap_or(&[]);
        Stage {
            bias: from(self.bias),
            mult: from(self.mult),
            shift: from(self.shift),
            ..self
        }
    }

    /// `out[c] = self.finish(c, acc[c])` for each output (as many as both have): the scalar finish of
    /// a run of channels.
    #[inline(always)]
    pub fn finish_all(&self, acc: &[i32], out: &mut [i8]) {
        for (c, (o, &a)) in out.iter_mut().zip(acc).enumerate() {
            *o = self.finish(c, a);
        }
    }

    /// Channel `c`'s output for accumulator `acc` (`sum w * (x - x_zero_point)`, or the raw sum where
    /// the bias holds the correction): the reference's `requantize_acc(acc + bias)`, exactly.
    #[inline(always)]
    pub fn finish(&self, c: usize, acc: i32) -> i8 {
        let at = |a: &[i32]| a.get(c).copied().unwrap_or(0);
        let acc = acc.wrapping_add(at(self.bias));
        let scaled = self.rounding.scale(acc, at(self.mult), at(self.shift));
        clamp_to_i8(
            scaled.saturating_add(self.y_zero_point.into()),
            self.act_min,
            self.act_max,
        )
    }
}

/// The layer-wide part of a stage (everything but the per-channel arrays).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StageParams {
    /// Rounding mode.
    pub rounding: RequantRounding,
    /// Output zero point.
    pub y_zero_point: i8,
    /// Lower clamp.
    pub act_min: i8,
    /// Upper clamp.
    pub act_max: i8,
}

/// `StageParams::from(p)` for the parameters of each int8 layer with an output stage.
macro_rules! stage_params_from {
    ($($params:ty),*) => {$(
        impl From<&$params> for StageParams {
            fn from(p: &$params) -> StageParams {
                StageParams {
                    rounding: p.rounding,
                    y_zero_point: p.y_zero_point,
                    act_min: p.act_min,
                    act_max: p.act_max,
                }
            }
        }
    )*};
}

stage_params_from!(QuantConv2dParams, QuantFullyConnectedParams);

/// Fills the three per-channel arrays of a stage (`arrays` holds `3 * len`: biases, multipliers,
/// shifts) for `groups` groups of `n` channels, group `g`'s channel `c` at `g * padded + c` (the padding
/// is zero), from the layer's bias and `[OC, 2]` or `[1, 2]` requantization rows. Returns whether every
/// row is in the vector finishes' range (the stage's `simd`).
pub(crate) fn fill(
    arrays: &mut [i32],
    groups: usize,
    n: usize,
    padded: usize,
    b: Option<&[i32]>,
    requant: &[i32],
) -> bool {
    let len = arrays.len() / 3;
    arrays.fill(0);
    let (bias, rest) = arrays.split_at_mut(len);
    let (mult, shift) = rest.split_at_mut(len);
    let per_tensor = requant.len() == 2;
    let mut simd = true;
    for g in 0..groups {
        for c in 0..n {
            let oc = g * n + c;
            let at = g * padded + c;
            let row = if per_tensor { 0 } else { 2 * oc };
            let (m, s) = match requant.get(row..row + 2) {
                Some(&[m, s]) => (m, s),
                _ => (0, 0),
            };
            simd &= m >= 0 && (MIN_SHIFT..=MAX_SHIFT).contains(&s);
            if let (Some(dst), Some(&v)) = (bias.get_mut(at), b.and_then(|b| b.get(oc))) {
                *dst = v;
            }
            if let (Some(dm), Some(ds)) = (mult.get_mut(at), shift.get_mut(at)) {
                (*dm, *ds) = (m, s);
            }
        }
    }
    simd
}

/// The stage over arrays [`fill`]ed (biases, multipliers, shifts, `arrays.len() / 3` each).
pub(crate) fn view(arrays: &[i32], p: StageParams, simd: bool) -> Stage<'_> {
    let len = arrays.len() / 3;
    let (bias, rest) = arrays.split_at(len);
    let (mult, shift) = rest.split_at(len);
    Stage {
        bias,
        mult,
        shift,
        rounding: p.rounding,
        y_zero_point: p.y_zero_point,
        act_min: p.act_min,
        act_max: p.act_max,
        simd,
    }
}
