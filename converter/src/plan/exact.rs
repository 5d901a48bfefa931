//! Exact search for small graphs: branch and bound over first-fit placement orders.
//!
//! Why orders are enough: push every buffer of an optimal plan down as far as it goes and sort the
//! buffers by (offset, index). First fit in that order puts each buffer at or below its offset, so
//! it is optimal too; repeating this ends (offsets only go down) at a plan that first fit in its
//! own (offset, index) order reproduces. So some optimal plan comes from an order along which the
//! first-fit offsets, with the index as tie-break, only grow, and the search only walks such
//! orders. Each node is bounded below by the global [`lower_bound`](super::lower_bound), the
//! highest end placed so far, for each buffer still to place the lowest end it can get at or above
//! the last offset, and, for each step, the last offset plus the sizes still to place that live
//! at that step. A node budget keeps the search short; when it runs out, the best plan found so far
//! (never worse than the seed) is returned and the outcome says the search is incomplete.

use super::orders::lowest_gap;
use super::{align_up, lower_bound, Buffer, Placement, Planner};

/// Branch and bound over placement orders.
#[derive(Clone, Copy, Debug)]
pub struct ExactSearch {
    /// Graphs with more non-empty buffers than this (at most 64) are not searched.
    pub max_buffers: usize,
    /// Search nodes visited before giving up on a proof.
    pub node_budget: u64,
}

impl Default for ExactSearch {
    fn default() -> Self {
        ExactSearch {
            max_buffers: 14,
            node_budget: 200_000,
        }
    }
}

/// What a search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchOutcome {
    /// The best plan: the seed, or a smaller one.
    pub placement: Placement,
    /// True when the plan is proven optimal (the search finished, or the plan meets the lower
    /// bound).
    pub optimal: bool,
    /// Search nodes visited.
    pub nodes: u64,
}

impl ExactSearch {
    /// Searches for a plan smaller than `seed` (a valid plan of `buffers`).
    pub fn search(&self, buffers: &[Buffer], seed: Placement) -> SearchOutcome {
        let lb = lower_bound(buffers);
        let ids: Vec<usize> = (0..buffers.len())
            .filter(|&i| buffers[i].size > 0)
            .collect();
        if seed.total <= lb || ids.len() > self.max_buffers.min(64) {
            return SearchOutcome {
                optimal: seed.total <= lb,
                placement: seed,
                nodes: 0,
            };
        }
        let mut s = Search::new(buffers, &ids, lb, seed.total, self.node_budget);
        s.node(&mut Vec::with_capacity(ids.len()), s.all, 0, None);
        let optimal = !s.out_of_budget || s.best <= lb;
        let nodes = s.nodes;
        let placement = match s.best_offsets {
            Some(found) => {
                let mut offsets = vec![0usize; buffers.len()];
                for (k, &i) in ids.iter().enumerate() {
                    offsets[i] = found[k];
                }
                Placement {
                    offsets,
                    total: s.best,
                }
            }
            None => seed,
        };
        SearchOutcome {
            placement,
            optimal,
            nodes,
        }
    }
}

impl Planner for ExactSearch {
    /// Searches from the best of several greedy orders.
    fn plan(&self, buffers: &[Buffer]) -> Placement {
        let seed = super::orders::BestOfOrders.plan(buffers);
        self.search(buffers, seed).placement
    }
}

/// The search state over the `k` non-empty buffers, numbered `0..k`.
struct Search {
    size: Vec<usize>,
    /// Bit `j` of `conflicts[b]`: buffers `b` and `j` are live at a common step.
    conflicts: Vec<u64>,
    /// For each step where a lifetime starts, the buffers live there.
    live_at: Vec<u64>,
    /// Bit `j` of `twins_before[b]`: `j < b` has the same size and lifetime as `b`. Twins are
    /// interchangeable, so they are placed in index order.
    twins_before: Vec<u64>,
    all: u64,
    lb: usize,
    budget: u64,
    nodes: u64,
    out_of_budget: bool,
    best: usize,
    best_offsets: Option<Vec<usize>>,
}

impl Search {
    fn new(buffers: &[Buffer], ids: &[usize], lb: usize, best: usize, budget: u64) -> Self {
        let k = ids.len();
        let b = |x: usize| &buffers[ids[x]];
        let conflicts = (0..k)
            .map(|x| {
                (0..k)
                    .filter(|&y| y != x && b(x).lives_with(b(y)))
                    .fold(0u64, |m, y| m | 1 << y)
            })
            .collect();
        let mut starts: Vec<usize> = (0..k).map(|x| b(x).first_use).collect();
        starts.sort_unstable();
        starts.dedup();
        let live_at = starts
            .iter()
            .map(|&t| {
                (0..k)
                    .filter(|&x| b(x).first_use <= t && t <= b(x).last_use)
                    .fold(0u64, |m, x| m | 1 << x)
            })
            .collect();
        let twins_before = (0..k)
            .map(|x| {
                (0..x)
                    .filter(|&y| {
                        align_up(b(y).size) == align_up(b(x).size)
                            && (b(y).first_use, b(y).last_use) == (b(x).first_use, b(x).last_use)
                    })
                    .fold(0u64, |m, y| m | 1 << y)
            })
            .collect();
        Search {
            size: (0..k).map(|x| align_up(b(x).size)).collect(),
            conflicts,
            live_at,
            twins_before,
            all: if k == 64 { u64::MAX } else { (1u64 << k) - 1 },
            lb,
            budget,
            nodes: 0,
            out_of_budget: false,
            best,
            best_offsets: None,
        }
    }

    /// Sum of the sizes of the buffers in `mask`.
    fn sum(&self, mask: u64) -> usize {
        bits(mask).map(|x| self.size[x]).sum()
    }

    /// Explores the node where `placed` ((offset, end, buffer), offsets non-decreasing) is placed,
    /// `remaining` is not, the highest end is `height`, and `last` is the last (offset, buffer).
    fn node(
        &mut self,
        placed: &mut Vec<(usize, usize, usize)>,
        remaining: u64,
        height: usize,
        last: Option<(usize, usize)>,
    ) {
        if self.out_of_budget || self.best <= self.lb {
            return;
        }
        self.nodes += 1;
        if self.nodes > self.budget {
            self.out_of_budget = true;
            return;
        }
        if remaining == 0 {
            if height < self.best {
                self.best = height;
                let mut offsets = vec![0usize; self.size.len()];
                for &(o, _, x) in placed.iter() {
                    offsets[x] = o;
                }
                self.best_offsets = Some(offsets);
            }
            return;
        }
        let floor = last.map_or(0, |(o, _)| o);
        // Lower bounds on the total of any completion.
        let mut bound = height.max(self.lb);
        for &live in &self.live_at {
            bound = bound.max(floor + self.sum(live & remaining));
        }
        // Children: (first-fit offset, buffer) of the buffers that may come next.
        let mut children: Vec<(usize, usize)> = Vec::new();
        let mut taken: Vec<(usize, usize)> = Vec::with_capacity(placed.len());
        for x in bits(remaining) {
            taken.clear();
            taken.extend(
                placed
                    .iter()
                    .filter(|&&(_, _, y)| self.conflicts[x] >> y & 1 == 1)
                    .map(|&(o, e, _)| (o, e)),
            );
            // `placed` is sorted by offset, so `taken` is too.
            let at_floor = lowest_gap(&taken, floor, self.size[x]);
            bound = bound.max(at_floor + self.size[x]);
            let fit = lowest_gap(&taken, 0, self.size[x]);
            let after_last = last.is_none_or(|l| (fit, x) > l);
            if after_last && self.twins_before[x] & remaining == 0 {
                children.push((fit, x));
            }
        }
        if bound >= self.best {
            return;
        }
        children.sort_unstable_by_key(|&(fit, x)| (fit, std::cmp::Reverse(self.size[x]), x));
        for (fit, x) in children {
            let end = fit + self.size[x];
            if end >= self.best {
                continue;
            }
            placed.push((fit, end, x));
            self.node(
                placed,
                remaining & !(1 << x),
                height.max(end),
                Some((fit, x)),
            );
            placed.pop();
        }
    }
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let x = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        Some(x)
    })
}
