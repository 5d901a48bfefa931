//! Parameters of a layer normalization (`ops::nn::layer_norm`).

use serde::{Deserialize, Serialize};

/// Parameters of a layer normalization.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LayerNormParams {
    /// First normalized axis (non-negative, below the rank); every axis from it on is normalized.
    pub axis: u8,
    /// Added to the variance before the square root.
    pub epsilon: f32,
}
