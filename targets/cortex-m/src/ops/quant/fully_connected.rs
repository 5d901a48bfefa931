//! int8 fully connected layer on the DSP extension, bit-identical to
//! `ember_core::ops::quant::fully_connected::fully_connected`: each input row is dotted with two weight
//! rows at a time ([`dot_offset2`]), so every `x` word is unpacked once per pair of outputs.

use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
use ember_core::ops::{In, Out};

use super::dot::{dot_offset, dot_offset2};
use ember_core::ops::quant::requant::requantize_acc;

/// `y[r, o] = clamp(requant_o(sum_i w[o, i] * (x[r, i] - x_zero_point) + b[o]) + y_zero_point)`: the
/// reference's contract, for the shapes its `validate` accepts.
pub fn fully_connected(
    p: &QuantFullyConnectedParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
) {
    let (out_features, in_features) = (w.dims[0], w.dims[1]);
    if y.data.is_empty() {
        return;
    }
    let x_offset = -i32::from(p.x_zero_point);
    let finish = |acc: i32, o: usize| {
        let acc = match b {
            Some(b) => acc.wrapping_add(b[o]),
            None => acc,
        };
        requantize_acc(
            acc,
            requant,
            o,
            p.rounding,
            p.y_zero_point,
            p.act_min,
            p.act_max,
        )
    };
    let w_row = |o: usize| &w.data[o * in_features..][..in_features];
    for (r, y_row) in y.data.chunks_exact_mut(out_features).enumerate() {
        let x_row = &x.data[r * in_features..][..in_features];
        let mut pairs = y_row.chunks_exact_mut(2);
        for (pair, outs) in (&mut pairs).enumerate() {
            let o = 2 * pair;
            let (da, db) = dot_offset2(x_row, w_row(o), w_row(o + 1), x_offset);
            outs[0] = finish(da, o);
            outs[1] = finish(db, o + 1);
        }
        if let [last] = pairs.into_remainder() {
            let o = out_features - 1;
            *last = finish(dot_offset(x_row, w_row(o), x_offset), o);
        }
    }
}
