//! Parameters of a triangle of matrices (`ops::array::trilu`).

use serde::{Deserialize, Serialize};

/// Parameters of `Trilu`: which triangle of each matrix (the last two axes) to keep.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TriluParams {
    /// Keep the upper triangle (`col - row >= k`); otherwise the lower one (`col - row <= k`).
    pub upper: bool,
    /// The diagonal: 0 the main one, positive above it, negative below.
    pub k: i64,
}
