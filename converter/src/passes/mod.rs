//! Graph passes, each small and in its own file, run as explicit lists to a fixed point with a
//! consistency check ([`Graph::check`]) after every pass:
//!
//! 1. clean-up: remove identities ([`identity`]), fold or rewrite BatchNormalization
//!    ([`fold_batch_norm`]), fuse activations into their producers ([`fuse_activation`]), remove dead
//!    nodes ([`dead_nodes`]);
//! 2. layout: move 4-D activations of spatial ops to NHWC ([`layout`]), once;
//! 3. tidy-up: merge and simplify transposes ([`transposes`]), collapse reshape chains
//!    ([`reshapes`]), then the clean-up passes again.
//!
//! Transposes are only inserted around layout-sensitive ops, never pushed through them into weights
//! (a later step). Reshape-like nodes that survive are free at run time: the memory planner makes
//! them aliases.

pub mod dead_nodes;
pub mod fold_batch_norm;
pub mod fuse_activation;
pub mod identity;
pub mod layout;
pub mod reshapes;
pub mod transposes;

use crate::ir::Graph;
use crate::ConvertError;

/// A pass: rewrites the graph, returns whether it changed anything.
pub type Pass = fn(&mut Graph) -> Result<bool, ConvertError>;

const CLEANUP: &[(&str, Pass)] = &[
    ("identity", identity::run),
    ("fold_batch_norm", fold_batch_norm::run),
    ("fuse_activation", fuse_activation::run),
    ("dead_nodes", dead_nodes::run),
];

const TIDY: &[(&str, Pass)] = &[
    ("transposes", transposes::run),
    ("reshapes", reshapes::run),
    ("identity", identity::run),
    ("dead_nodes", dead_nodes::run),
];

/// Most rounds of a pass list before giving up (each round must change something to continue).
const MAX_ROUNDS: usize = 10_000;

/// Runs every pass of the pipeline.
pub fn run(g: &mut Graph) -> Result<(), ConvertError> {
    check(g, "import")?;
    fixed_point(g, CLEANUP)?;
    layout::run(g)?;
    check(g, "layout")?;
    fixed_point(g, TIDY)
}

fn fixed_point(g: &mut Graph, passes: &[(&str, Pass)]) -> Result<(), ConvertError> {
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for (name, pass) in passes {
            changed |= pass(g)?;
            check(g, name)?;
        }
        if !changed {
            return Ok(());
        }
    }
    Err(ConvertError::internal(
        "graph passes did not reach a fixed point",
    ))
}

fn check(g: &Graph, after: &str) -> Result<(), ConvertError> {
    g.check()
        .map_err(|e| ConvertError::internal(format!("graph check after {after}: {e}")))
}
