//! Offline memory planning of the activation arena.
//!
//! A planner gets one [`Buffer`] per block of bytes that must stay intact from the step that writes
//! it to the last step that reads it (an alias group of tensors counts as one buffer), and returns
//! an offset for each such that buffers live at the same step never overlap. Every plan is reported
//! against [`lower_bound`]: no planner can do better than the largest sum of sizes live at one step.
//! The baseline is TFLM's greedy-by-size planner ([`greedy`], on `ember_core::plan`, which the GPU
//! target plans its activations with too). [`best::plan_offsets`], which
//! `convert` uses, also tries several first-fit orders ([`orders`]) and, for small graphs, an exact
//! search ([`exact`]), and keeps the smallest plan, so it is never worse than greedy. (In-place
//! element-wise ops would need the runtime to allow an op's output to overlap its inputs; it does
//! not, so every op's output gets bytes of its own.)

pub mod best;
pub mod exact;
pub mod greedy;
pub mod orders;

use ember_core::format::ALIGN;
pub use ember_core::plan::{align_up, Buffer, Placement};

/// A memory planner.
pub trait Planner {
    /// Places the buffers.
    fn plan(&self, buffers: &[Buffer]) -> Placement;
}

/// The largest sum of (aligned) sizes of buffers live at one step: no plan can use less.
pub fn lower_bound(buffers: &[Buffer]) -> usize {
    // The sum only changes where a lifetime starts, so checking those steps is enough.
    buffers
        .iter()
        .map(|b| {
            buffers
                .iter()
                .filter(|o| o.first_use <= b.first_use && b.first_use <= o.last_use)
                .map(|o| align_up(o.size))
                .fold(0usize, usize::saturating_add)
        })
        .max()
        .unwrap_or(0)
}

/// Checks a placement: every offset aligned, no two buffers live at the same step overlap, and the
/// total covers every buffer. Returns the first violation.
pub fn verify(buffers: &[Buffer], placement: &Placement) -> Result<(), String> {
    if placement.offsets.len() != buffers.len() {
        return Err(format!(
            "{} offsets for {} buffers",
            placement.offsets.len(),
            buffers.len()
        ));
    }
    let ends: Vec<usize> = buffers
        .iter()
        .zip(&placement.offsets)
        .map(|(b, &o)| o.saturating_add(align_up(b.size)))
        .collect();
    for (i, b) in buffers.iter().enumerate() {
        let oi = placement.offsets[i];
        if !oi.is_multiple_of(ALIGN) {
            return Err(format!(
                "buffer {i} is at offset {oi}, not a multiple of {ALIGN}"
            ));
        }
        if ends[i] > placement.total {
            return Err(format!(
                "buffer {i} ends at {} past the total {}",
                ends[i], placement.total
            ));
        }
        for (j, c) in buffers.iter().enumerate().skip(i + 1) {
            let oj = placement.offsets[j];
            let disjoint = ends[i] <= oj || ends[j] <= oi || b.size == 0 || c.size == 0;
            if b.lives_with(c) && !disjoint {
                return Err(format!(
                    "buffers {i} [{oi}, {}) and {j} [{oj}, {}) are live together and overlap",
                    ends[i], ends[j]
                ));
            }
        }
    }
    Ok(())
}
