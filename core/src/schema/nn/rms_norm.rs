//! Parameters of an RMS normalization (`ops::nn::rms_norm`).

use serde::{Deserialize, Serialize};

/// Parameters of an RMS normalization.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RmsNormParams {
    /// First normalized axis (non-negative, below the rank); every axis from it on is normalized.
    pub axis: u8,
    /// Added to the mean of the squares before the square root.
    pub epsilon: f32,
}
