//! Parameters of non-maximum suppression (`ops::nn::non_max_suppression`).

use serde::{Deserialize, Serialize};

/// Parameters of `NonMaxSuppression`, whose count depends on the data: the output holds room for
/// `max` selected boxes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NmsParams {
    /// Boxes are `[x_center, y_center, width, height]`; otherwise `[y1, x1, y2, x2]` (any two
    /// opposite corners).
    pub center_point_box: bool,
    /// The most boxes selected per batch and class.
    pub max_per_class: u32,
    /// A box whose IoU with a selected one is above this is suppressed.
    pub iou_threshold: f32,
    /// Only boxes scoring above this are candidates (`-inf`: every box).
    pub score_threshold: f32,
    /// The most selected boxes the output holds in all (`--max-count`): it is `[max, 3]`.
    pub max: u32,
}
