//! Graph passes, each small and in its own file, run as explicit lists to a fixed point with a
//! consistency check ([`Graph::check`]) after every pass:
//!
//! 1. clean-up: fold nodes whose inputs are all constants ([`fold_constants`]), remove identities
//!    ([`identity`]), fold or rewrite BatchNormalization
//!    ([`fold_batch_norm`]), fuse activations into their producers ([`fuse_activation`]), recognize
//!    HardSwish and SiLU written out in element-wise ops ([`fuse_hard_swish`]), fold multiplications and
//!    additions by constants into the convolution or fully connected layer before or after them
//!    ([`fold_affine`]), fold the scales and shifts left after a HardSwish into it
//!    ([`scale_hard_swish`]), fuse Dequantize -> float op -> Quantize into int8 ops ([`qdq`]), remove dead
//!    nodes ([`dead_nodes`]);
//! 2. layout: move 4-D activations of spatial ops to NHWC ([`layout`]), once;
//! 3. tidy-up: fold constants again, merge and simplify transposes ([`transposes`]), fold a transpose
//!    before a flatten into the fully connected weights after it ([`flatten_transpose`]), collapse
//!    reshape chains ([`reshapes`]), then the clean-up passes again;
//! 4. outputs: give graph outputs that folded into constants a copy op ([`constant_outputs`]), once.
//!
//! Transposes are only inserted around layout-sensitive ops; the one case pushed into weights is the
//! flatten before a fully connected layer. Reshape-like nodes that survive are free at run time: the memory planner makes
//! them aliases.
//!
//! Every pass application is recorded in a [`PassRecord`] ([`log`]): its stage, round, node counts
//! and what it changed.

pub mod constant_outputs;
pub mod dead_nodes;
pub mod flatten_transpose;
pub mod fold_affine;
pub mod fold_batch_norm;
pub mod fold_constants;
pub mod fuse_activation;
pub mod fuse_hard_swish;
pub mod identity;
pub mod layout;
pub mod log;
pub mod qdq;
pub mod reshapes;
pub mod scale_hard_swish;
pub mod transposes;

use crate::ir::Graph;
use crate::ConvertError;

pub use log::PassRecord;
use log::Snapshot;

/// A pass: rewrites the graph, returns whether it changed anything.
pub type Pass = fn(&mut Graph) -> Result<bool, ConvertError>;

const CLEANUP: &[(&str, Pass)] = &[
    ("fold_constants", fold_constants::run),
    ("identity", identity::run),
    ("fold_batch_norm", fold_batch_norm::run),
    // HardSwish first: its `/ 6` would otherwise fold into the next layer, leaving the rest of it.
    ("fuse_activation", fuse_activation::run),
    ("fuse_hard_swish", fuse_hard_swish::run),
    ("fold_affine", fold_affine::run),
    // After fold_affine: a scale that can fold into the next layer costs nothing there.
    ("scale_hard_swish", scale_hard_swish::run),
    ("qdq", qdq::run),
    ("dead_nodes", dead_nodes::run),
];

const TIDY: &[(&str, Pass)] = &[
    ("fold_constants", fold_constants::run),
    ("transposes", transposes::run),
    ("flatten_transpose", flatten_transpose::run),
    ("reshapes", reshapes::run),
    ("identity", identity::run),
    ("dead_nodes", dead_nodes::run),
];

/// Most rounds of a pass list before giving up (each round must change something to continue).
const MAX_ROUNDS: usize = 10_000;

/// Runs every pass of the pipeline, and returns what each application changed.
pub fn run(g: &mut Graph) -> Result<Vec<PassRecord>, ConvertError> {
    check(g, "import")?;
    let mut log = Vec::new();
    fixed_point(g, "clean-up", CLEANUP, &mut log)?;
    apply(g, "layout", ("layout", layout::run), 1, &mut log)?;
    fixed_point(g, "tidy-up", TIDY, &mut log)?;
    apply(
        g,
        "outputs",
        ("constant_outputs", constant_outputs::run),
        1,
        &mut log,
    )?;
    Ok(log)
}

fn fixed_point(
    g: &mut Graph,
    stage: &'static str,
    passes: &[(&'static str, Pass)],
    log: &mut Vec<PassRecord>,
) -> Result<(), ConvertError> {
    for round in 1..=MAX_ROUNDS {
        let mut changed = false;
        for &pass in passes {
            changed |= apply(g, stage, pass, round, log)?;
        }
        if !changed {
            return Ok(());
        }
    }
    Err(ConvertError::internal(
        "graph passes did not reach a fixed point",
    ))
}

/// Runs one pass, checks the graph, and records the application.
fn apply(
    g: &mut Graph,
    stage: &'static str,
    (name, pass): (&'static str, Pass),
    round: usize,
    log: &mut Vec<PassRecord>,
) -> Result<bool, ConvertError> {
    let before = Snapshot::of(g);
    let changed = pass(g)?;
    check(g, name)?;
    let mut changes = if changed { before.diff(g) } else { Vec::new() };
    if changed && changes.is_empty() {
        changes.push("parameters rewritten (no node added, removed or rewired)".to_string());
    }
    log.push(PassRecord {
        stage,
        name,
        round,
        nodes_before: before.len(),
        nodes_after: g.nodes.len(),
        changes,
    });
    Ok(changed)
}

fn check(g: &Graph, after: &str) -> Result<(), ConvertError> {
    g.check()
        .map_err(|e| ConvertError::internal(format!("graph check after {after}: {e}")))
}
