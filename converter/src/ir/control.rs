//! Control flow in the IR: an ONNX `Loop`, `Scan` or `If` is one node ([`Op::Control`](super::Op::Control))
//! that holds its sub-graphs, each imported and run through the graph passes on its own, with static
//! shapes like every graph. The node's output is a token (a loop's iteration counter, an `If`'s taken
//! branch); each value the ONNX node gives is a [`Op::ControlOutput`](super::Op::ControlOutput) node
//! reading that token, so that the outer graph's passes see one value per node as everywhere else.
//! Lowering lays the sub-graphs out in the op list (`lower::control`).

use ember_core::schema::control::{LoopBound, Trip};

use super::{DType, Graph};

/// A scanned axis: of a `Scan` input (read a slice per iteration) or of a stacked output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanAxis {
    /// The axis.
    pub axis: usize,
    /// From the last slice to the first.
    pub reverse: bool,
}

/// A loop (ONNX `Loop`, or `Scan`, whose trip count is its inputs' length).
///
/// The outer node's inputs are `[trip][, cond]` (as `bound` says), the initial values of the `states`
/// carried values, the `scan_in` tensors scanned, then the outer values the body reads (`captured`).
/// The body's inputs are, in order: the iteration number (I64 scalar), the condition (Bool scalar), the
/// carried values, one slice of each scanned input, the captured values. Its outputs: the condition
/// (when `cond_out`), the carried values, one element of each stacked output.
#[derive(Clone, Debug)]
pub struct Loop {
    /// The body, after the graph passes.
    pub body: Graph,
    /// The trip count's bound and which inputs the node has.
    pub bound: LoopBound,
    /// Whether the body computes a condition (an ONNX `Loop`'s first body output; a `Scan` has none).
    pub cond_out: bool,
    /// Number of loop-carried values.
    pub states: usize,
    /// The scanned inputs' axes (a `Scan`'s).
    pub scan_in: Vec<ScanAxis>,
    /// The stacked outputs' axes.
    pub scan_out: Vec<ScanAxis>,
}

/// An `If` whose condition is known only at run time: both branches, each converted with the outer
/// values it reads as its inputs. The node's inputs are the condition, then the `then` branch's
/// captured values, then the `else` branch's.
#[derive(Clone, Debug)]
pub struct Branches {
    /// The branch taken when the condition holds.
    pub then: Graph,
    /// The other.
    pub els: Graph,
}

/// What an [`Op::Control`](super::Op::Control) node runs.
#[derive(Clone, Debug)]
pub enum Control {
    /// A loop.
    Loop(Loop),
    /// A two-way branch.
    If(Branches),
}

impl PartialEq for Control {
    /// Two control nodes are equal when they are the same one (the sub-graphs are not compared).
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Control {
    /// The token's dtype: a loop's counter (I64), an `If`'s taken branch (Bool).
    pub fn token_dtype(&self) -> DType {
        match self {
            Control::Loop(_) => DType::I64,
            Control::If(_) => DType::Bool,
        }
    }
}

impl Loop {
    /// Number of body inputs before the captured values.
    pub fn own_inputs(&self) -> usize {
        2 + self.states + self.scan_in.len()
    }

    /// Number of outer node inputs before the captured values.
    pub fn node_inputs(&self) -> usize {
        usize::from(self.bound.trip == Trip::Input)
            + usize::from(self.bound.cond)
            + self.states
            + self.scan_in.len()
    }
}
