//! Parameters of the indices of the non-zero elements (`ops::array::non_zero`).

use serde::{Deserialize, Serialize};

/// Parameters of `NonZero`, whose count depends on the data: the output holds room for `max`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NonZeroParams {
    /// The most non-zero elements the output holds (`--max-count`): it is `[rank, max]`.
    pub max: u32,
}
