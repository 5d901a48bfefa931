//! Parameters of a discrete Fourier transform (`ops::math::dft`): ONNX `DFT` (one transform along
//! an axis) and `STFT` (a transform per frame of a signal).

use serde::{Deserialize, Serialize};

/// Parameters of `Dft`. Tensors hold complex numbers as ONNX does: a last axis of 1 (real) or 2
/// (real, imaginary); the output's last axis is 2.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DftParams {
    /// The transformed axis of the input (below its last, complex, axis).
    pub axis: u8,
    /// The transform's length `n`: the input is cut, or padded with zeros, to `n` along the axis
    /// (each frame is `n` long when framed).
    pub length: u32,
    /// The inverse transform, scaled by `1/n`.
    pub inverse: bool,
    /// Only the bins `0..=n/2` (of a real input, whose other bins are their conjugates).
    pub onesided: bool,
    /// 0: one transform along the axis (`DFT`). Otherwise a transform of every frame of `length`
    /// samples, one every `frame_step` along axis 1 of a `[batch, signal, 1 or 2]` input, times the
    /// optional window (`STFT`): the output is `[batch, frames, bins, 2]`.
    pub frame_step: u32,
}
