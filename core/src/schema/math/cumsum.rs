//! Parameters of a cumulative sum (`ops::math::cumsum`).

use serde::{Deserialize, Serialize};

/// Parameters of `CumSum` along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CumSumParams {
    /// The axis (non-negative, below the rank).
    pub axis: u8,
    /// Each sum leaves out its own element (the first is 0).
    pub exclusive: bool,
    /// Sum from the end of the axis towards its start.
    pub reverse: bool,
}
