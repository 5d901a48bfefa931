//! The planner `convert` uses: exact search ([`ExactSearch`]) for graphs small enough, the best of
//! several first-fit orders ([`BestOfOrders`]) for every graph, and TFLM's greedy plan computed
//! alongside, so the plan kept is never worse than greedy and the report can say by how much it is
//! better.

use super::exact::ExactSearch;
use super::greedy::GreedyBySize;
use super::orders::BestOfOrders;
use super::{lower_bound, Buffer, Placement, Planner};

/// A plan with the figures it is reported against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChosenPlan {
    /// The smallest plan found.
    pub placement: Placement,
    /// Bytes of TFLM's greedy-by-size plan for the same buffers.
    pub greedy_total: usize,
    /// The lower bound: the largest sum of sizes live at one step.
    pub lower_bound: usize,
    /// True when `placement` is proven optimal (it meets the lower bound, or the exact search
    /// finished).
    pub optimal: bool,
}

/// Plans with greedy, the best of several orders and, for small graphs, exact search; keeps the
/// smallest (greedy's on a tie).
pub fn plan_offsets(buffers: &[Buffer]) -> ChosenPlan {
    let greedy = GreedyBySize.plan(buffers);
    let greedy_total = greedy.total;
    let orders = BestOfOrders.plan(buffers);
    let seed = if orders.total < greedy.total {
        orders
    } else {
        greedy
    };
    let found = ExactSearch::default().search(buffers, seed);
    ChosenPlan {
        placement: found.placement,
        greedy_total,
        lower_bound: lower_bound(buffers),
        optimal: found.optimal,
    }
}

/// [`plan_offsets`] as a [`Planner`].
#[derive(Clone, Copy, Debug, Default)]
pub struct BestPlanner;

impl Planner for BestPlanner {
    fn plan(&self, buffers: &[Buffer]) -> Placement {
        plan_offsets(buffers).placement
    }
}
