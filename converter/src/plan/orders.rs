//! First-fit placement in a chosen order, and the best of several orders.
//!
//! Every plan that [`first_fit`] makes is a valid one; only the order decides how good it is. TFLM's
//! greedy planner is one order (largest first). [`BestOfOrders`] tries a handful of orders that win
//! on different graph shapes (largest first, earliest first, largest area, longest lived, most
//! crowded lifetime first, ...) and keeps the smallest plan, so it is never worse than greedy.

use std::cmp::Reverse;

pub use ember_core::plan::first_fit;
pub(crate) use ember_core::plan::lowest_gap;

use super::{align_up, Buffer, Placement, Planner};

/// The orders [`BestOfOrders`] tries, each as a sort key (ties go to the lower index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Largest first (TFLM's greedy order), ties by earlier first use.
    Size,
    /// Earliest first use first, ties largest first.
    FirstUse,
    /// Latest last use first, ties largest first.
    LastUse,
    /// Largest size x lifetime first.
    Area,
    /// Longest lifetime first, ties largest first.
    Lifetime,
    /// Buffers whose lifetime holds the most crowded step (the largest sum of live sizes) first,
    /// ties largest first: the peak is packed before anything else claims its bytes.
    Pressure,
    /// Largest sum of the sizes of the buffers it lives with first, ties largest first.
    Conflicts,
}

impl Order {
    /// Every order, greedy's first.
    pub const ALL: [Order; 7] = [
        Order::Size,
        Order::FirstUse,
        Order::LastUse,
        Order::Area,
        Order::Lifetime,
        Order::Pressure,
        Order::Conflicts,
    ];

    /// The buffer indices in this order.
    pub fn sort(self, buffers: &[Buffer]) -> Vec<usize> {
        let size = |i: usize| align_up(buffers[i].size);
        let span = |i: usize| buffers[i].last_use.saturating_sub(buffers[i].first_use) + 1;
        let mut order: Vec<usize> = (0..buffers.len()).collect();
        match self {
            Order::Size => return ember_core::plan::size_order(buffers),
            Order::FirstUse => order.sort_by_key(|&i| (buffers[i].first_use, Reverse(size(i)), i)),
            Order::LastUse => {
                order.sort_by_key(|&i| (Reverse(buffers[i].last_use), Reverse(size(i)), i))
            }
            Order::Area => {
                order.sort_by_key(|&i| (Reverse(size(i).saturating_mul(span(i))), i));
            }
            Order::Lifetime => order.sort_by_key(|&i| (Reverse(span(i)), Reverse(size(i)), i)),
            Order::Pressure => {
                let peak = peak_pressure(buffers);
                order.sort_by_key(|&i| (Reverse(peak[i]), Reverse(size(i)), i));
            }
            Order::Conflicts => {
                let conflicts: Vec<usize> = buffers
                    .iter()
                    .map(|b| {
                        buffers
                            .iter()
                            .filter(|o| o.lives_with(b))
                            .map(|o| align_up(o.size))
                            .fold(0usize, usize::saturating_add)
                    })
                    .collect();
                order.sort_by_key(|&i| (Reverse(conflicts[i]), Reverse(size(i)), i));
            }
        }
        order
    }
}

/// For each buffer, the largest sum of (aligned) sizes live at one step of its lifetime.
fn peak_pressure(buffers: &[Buffer]) -> Vec<usize> {
    // The sum only rises where a lifetime starts, so those steps are enough.
    let mut starts: Vec<usize> = buffers.iter().map(|b| b.first_use).collect();
    starts.sort_unstable();
    starts.dedup();
    let live_at: Vec<(usize, usize)> = starts
        .iter()
        .map(|&t| {
            let sum = buffers
                .iter()
                .filter(|b| b.first_use <= t && t <= b.last_use)
                .map(|b| align_up(b.size))
                .fold(0usize, usize::saturating_add);
            (t, sum)
        })
        .collect();
    buffers
        .iter()
        .map(|b| {
            live_at
                .iter()
                .filter(|&&(t, _)| b.first_use <= t && t <= b.last_use)
                .map(|&(_, s)| s)
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// First fit in each of [`Order::ALL`]; the smallest plan wins (the earliest order on a tie, so
/// greedy's plan when nothing beats it).
#[derive(Clone, Copy, Debug, Default)]
pub struct BestOfOrders;

impl Planner for BestOfOrders {
    fn plan(&self, buffers: &[Buffer]) -> Placement {
        let mut best = first_fit(buffers, &Order::Size.sort(buffers));
        for order in &Order::ALL[1..] {
            let p = first_fit(buffers, &order.sort(buffers));
            if p.total < best.total {
                best = p;
            }
        }
        best
    }
}
