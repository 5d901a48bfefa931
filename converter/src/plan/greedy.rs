//! TFLM's greedy-by-size planner: buffers sorted largest first, each placed at the lowest aligned
//! offset where it overlaps no already placed buffer that is live at the same time.

use super::{align_up, Buffer, Placement, Planner};

/// The greedy-by-size planner.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreedyBySize;

impl Planner for GreedyBySize {
    fn plan(&self, buffers: &[Buffer]) -> Placement {
        let mut order: Vec<usize> = (0..buffers.len()).collect();
        // Largest first; ties by earlier first use, then by index, so plans are deterministic.
        order.sort_by_key(|&i| {
            (
                std::cmp::Reverse(align_up(buffers[i].size)),
                buffers[i].first_use,
                i,
            )
        });
        let mut offsets = vec![0usize; buffers.len()];
        // (offset, end) of each placed buffer, with its index.
        let mut placed: Vec<(usize, usize, usize)> = Vec::with_capacity(buffers.len());
        let mut total = 0usize;
        for &i in &order {
            let size = align_up(buffers[i].size);
            let mut live: Vec<(usize, usize)> = placed
                .iter()
                .filter(|&&(_, _, j)| buffers[j].lives_with(&buffers[i]))
                .map(|&(o, e, _)| (o, e))
                .collect();
            live.sort_unstable();
            let mut offset = 0usize;
            for (o, e) in live {
                if offset.saturating_add(size) <= o {
                    break;
                }
                offset = offset.max(e);
            }
            let end = offset.saturating_add(size);
            offsets[i] = offset;
            placed.push((offset, end, i));
            total = total.max(end);
        }
        Placement { offsets, total }
    }
}
