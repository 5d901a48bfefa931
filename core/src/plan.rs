//! Placing blocks of bytes with lifetimes in one region (an activation arena): the first-fit placement
//! and TFLM's greedy-by-size planner built on it. Pure functions over sizes and lifetimes, so that the
//! converter (which plans the blob's arena, and searches for better plans on top) and the GPU target
//! (which plans its one device buffer of activations) place bytes with the same code.
//!
//! Sizes are rounded up to [`ALIGN`]; a caller that needs a coarser alignment rounds its sizes up to a
//! multiple of it first (every offset is then a multiple of it too: offsets are 0 or the end of another
//! block).

use alloc::vec::Vec;
use core::cmp::Reverse;

use crate::format::ALIGN;

/// A block of bytes with a lifetime in op steps (inclusive at both ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Size in bytes (the planner rounds it up to [`ALIGN`]).
    pub size: usize,
    /// First step at which the bytes must hold data (the producing op; 0 for graph inputs).
    pub first_use: usize,
    /// Last step at which they are read (the last op; the op count, or later, for graph outputs).
    pub last_use: usize,
}

impl Buffer {
    /// True when the two lifetimes share a step.
    pub fn lives_with(&self, other: &Buffer) -> bool {
        self.first_use <= other.last_use && other.first_use <= self.last_use
    }
}

/// Offsets of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// One offset per buffer, in the order given, each a multiple of [`ALIGN`].
    pub offsets: Vec<usize>,
    /// Bytes the plan needs: the end of the highest buffer, rounded up to [`ALIGN`].
    pub total: usize,
}

/// `n` rounded up to a multiple of [`ALIGN`] (saturating).
pub fn align_up(n: usize) -> usize {
    n.div_ceil(ALIGN).saturating_mul(ALIGN)
}

/// The lowest offset at or above `floor` where `size` bytes fit between the `(offset, end)` blocks
/// of `taken`, which are sorted by offset. Offsets and sizes are multiples of the alignment, so the
/// result is too.
pub fn lowest_gap(taken: &[(usize, usize)], floor: usize, size: usize) -> usize {
    let mut offset = floor;
    for &(o, e) in taken {
        if offset.saturating_add(size) <= o {
            break;
        }
        offset = offset.max(e);
    }
    offset
}

/// Places the buffers one by one in `order` (indices into `buffers`, each once), each at the lowest
/// aligned offset where it overlaps no already placed buffer that is live at the same time.
pub fn first_fit(buffers: &[Buffer], order: &[usize]) -> Placement {
    let mut offsets = alloc::vec![0usize; buffers.len()];
    // (offset, end, index) of each placed buffer.
    let mut placed: Vec<(usize, usize, usize)> = Vec::with_capacity(buffers.len());
    let mut live: Vec<(usize, usize)> = Vec::with_capacity(buffers.len());
    let mut total = 0usize;
    for &i in order {
        let size = align_up(buffers[i].size);
        live.clear();
        live.extend(
            placed
                .iter()
                .filter(|&&(_, _, j)| buffers[j].lives_with(&buffers[i]))
                .map(|&(o, e, _)| (o, e)),
        );
        live.sort_unstable();
        let offset = lowest_gap(&live, 0, size);
        let end = offset.saturating_add(size);
        offsets[i] = offset;
        placed.push((offset, end, i));
        total = total.max(end);
    }
    Placement { offsets, total }
}

/// TFLM's greedy order: largest (aligned) size first, ties by earlier first use, then by index, so
/// plans are deterministic.
pub fn size_order(buffers: &[Buffer]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..buffers.len()).collect();
    order.sort_by_key(|&i| (Reverse(align_up(buffers[i].size)), buffers[i].first_use, i));
    order
}

/// TFLM's greedy-by-size plan: [`first_fit`] in [`size_order`].
pub fn greedy_by_size(buffers: &[Buffer]) -> Placement {
    first_fit(buffers, &size_order(buffers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(size: usize, first_use: usize, last_use: usize) -> Buffer {
        Buffer {
            size,
            first_use,
            last_use,
        }
    }

    #[test]
    fn greedy_shares_bytes_between_disjoint_lifetimes() {
        // 0 and 2 never live together; 1 lives with both.
        let buffers = [buf(100, 0, 1), buf(40, 1, 2), buf(90, 2, 3)];
        let p = greedy_by_size(&buffers);
        assert_eq!(p.offsets, [0, 112, 0]);
        assert_eq!(p.total, 160);
    }

    #[test]
    fn lowest_gap_skips_blocks_too_close_together() {
        assert_eq!(lowest_gap(&[(0, 16), (32, 64)], 0, 32), 64);
        assert_eq!(lowest_gap(&[(0, 16), (32, 64)], 0, 16), 16);
        assert_eq!(lowest_gap(&[], 48, 16), 48);
    }
}
