//! TFLM's greedy-by-size planner: buffers sorted largest first, each placed at the lowest aligned
//! offset where it overlaps no already placed buffer that is live at the same time
//! ([`ember_core::plan::greedy_by_size`], shared with the GPU target).

use super::{Buffer, Placement, Planner};

/// The greedy-by-size planner.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreedyBySize;

impl Planner for GreedyBySize {
    fn plan(&self, buffers: &[Buffer]) -> Placement {
        ember_core::plan::greedy_by_size(buffers)
    }
}
