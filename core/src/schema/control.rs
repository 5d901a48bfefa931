//! Parameters of control flow (`ops::control`): ONNX `Loop`, `Scan` and `If` as the converter lays them
//! out in the op list (a loop's body between its `Loop` and `EndLoop` ops, run once per iteration; a
//! branch skipped by a `Branch` op), so that every op keeps one output and one planned buffer.

use serde::{Deserialize, Serialize};

/// Where a loop's trip count comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Trip {
    /// A constant (a `Loop`'s constant `M`, a `Scan`'s length): `max_trip` itself.
    Constant,
    /// Computed at run time: the op's first input (I64 scalar), at most `max_trip`.
    Input,
    /// None: the condition alone ends the loop, within `max_trip` iterations.
    Unbounded,
}

/// How a loop's trip count is bounded: the converter planned every buffer of its body once, and the
/// stacked outputs of a scan for `max_trip` iterations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoopBound {
    /// The most iterations the loop may run (its constant trip count, or `--max-trip`).
    pub max_trip: u32,
    /// Where the trip count comes from.
    pub trip: Trip,
    /// The op's next input is a condition (Bool scalar) that ends the loop when false.
    pub cond: bool,
}

/// One step of control flow.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ControlOp {
    /// A loop's head: inputs `[trip][, cond]` (by the bound), output the iteration counter (I64
    /// scalar), set to 0. When the loop runs no iteration, execution goes on after op `end`.
    Loop {
        /// Index of the loop's `EndLoop` op.
        end: u32,
        /// The trip count's bound and inputs.
        bound: LoopBound,
    },
    /// A loop's end: inputs `[trip][, cond]` (the condition the body computed), output the counter of
    /// the loop's head, incremented. While the count is below the trip count and the condition holds,
    /// execution goes back to the op after `start`; past `max_trip` it is an error.
    EndLoop {
        /// Index of the loop's `Loop` op.
        start: u32,
        /// The trip count's bound and inputs (the head's).
        bound: LoopBound,
        /// The loop stacks outputs planned for exactly `max_trip` iterations: ending sooner is an error.
        exact: bool,
    },
    /// Inputs `s` (an integer or Bool scalar), `a`, `b` (one dtype and shape, the output's):
    /// `y = if s != 0 { a } else { b }`, reading only the one chosen. A loop-carried value at the
    /// head (`s` the counter: the body's previous value, or the initial one), a loop's final value,
    /// and the outputs of an `If`.
    Select,
    /// Inputs `counter`, `x`: `y` is `x`'s slice at the counter along `axis` (from the end when
    /// `reverse`), without that axis: a `Scan` input's element.
    ScanRead {
        /// The scanned axis of `x`.
        axis: u8,
        /// Counts from the last slice.
        reverse: bool,
    },
    /// Inputs `counter`, `e`: writes `e` into `y`'s slice at the counter along `axis` (from the end when
    /// `reverse`) and leaves the other slices as they are: a stacked output of a loop.
    ScanWrite {
        /// The stacked axis of `y`.
        axis: u8,
        /// Counts from the last slice.
        reverse: bool,
    },
    /// Input a Bool scalar, copied to the output; when it equals `when`, execution goes on at op `to`
    /// (a later op, or the op count to end the run): an `If` skipping the branch not taken.
    Branch {
        /// Where execution goes on.
        to: u32,
        /// The value that jumps.
        when: bool,
    },
}

impl ControlOp {
    /// Short name, as `ember inspect` and profiles show it.
    pub fn name(&self) -> &'static str {
        match self {
            ControlOp::Loop { .. } => "Loop",
            ControlOp::EndLoop { .. } => "EndLoop",
            ControlOp::Select => "Select",
            ControlOp::ScanRead { .. } => "ScanRead",
            ControlOp::ScanWrite { .. } => "ScanWrite",
            ControlOp::Branch { .. } => "Branch",
        }
    }
}
