//! int8 fully connected layer on the DSP extension, bit-identical to
//! `ember_core::ops::quant::fully_connected::fully_connected`: core's loop nest with the SMLAD inner
//! product, each input row dotted with two weight rows at a time ([`dot_offset2`](super::dot::dot_offset2)),
//! so that every `x` word is unpacked once per pair of outputs.

use ember_core::ops::quant::fully_connected::{fully_connected_with, QuantFullyConnectedParams};
use ember_core::ops::quant::requant::HasOutputStage;
use ember_core::ops::{In, Out};

use super::dot::Smlad;

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
    fully_connected_with::<Smlad>(p, x, w, p.output_stage(b, requant), y)
}
