//! Parameters of the pooling ops (`ops::pool`), shared by their int8 versions.

use serde::{Deserialize, Serialize};

/// Window parameters shared by max and average pooling.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Pool2dParams {
    /// Window height.
    pub kernel_h: u16,
    /// Window width.
    pub kernel_w: u16,
    /// Vertical stride.
    pub stride_h: u16,
    /// Horizontal stride.
    pub stride_w: u16,
    /// Rows added above (ignored by max; counted by average only when `count_include_pad`).
    pub pad_top: u16,
    /// Columns added on the left.
    pub pad_left: u16,
    /// Rows added below.
    pub pad_bottom: u16,
    /// Columns added on the right.
    pub pad_right: u16,
    /// Average pooling divides by the full window (padding included) instead of the valid cells.
    pub count_include_pad: bool,
}
