//! Parameters of the largest or smallest `k` elements along an axis (`ops::nn::top_k`).

use serde::{Deserialize, Serialize};

/// Which of `TopK`'s two outputs a node computes (the converter emits one node per output the model
/// uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TopKOutput {
    /// The `k` values, of the input's dtype.
    Values,
    /// Their indices along the axis, int64.
    Indices,
}

/// Parameters of `TopK`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TopKParams {
    /// The axis (non-negative, below the rank).
    pub axis: u8,
    /// How many elements each lane keeps (at most the axis' length).
    pub k: u32,
    /// The largest elements (largest first); otherwise the smallest (smallest first). Equal values
    /// keep the lower index first; a NaN counts as larger than every number.
    pub largest: bool,
    /// Which output this node computes.
    pub output: TopKOutput,
}
