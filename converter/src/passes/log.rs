//! The pass log: what each pass application changed, for `ember inspect --passes`.
//!
//! It stays cheap: before a pass it takes a [`Snapshot`] of the node names, op kinds and wiring (no
//! tensor data), and afterwards [`Snapshot::diff`] describes the difference in a few short lines
//! (nodes fused, BatchNorms folded, transposes inserted, cancelled or removed, nodes removed or
//! rewired, constants added). Nodes are matched by name: passes keep a node's name unless they fuse
//! it, and a fused node is named `producer+consumer`.

use std::collections::{HashMap, HashSet};

use crate::ir::{Graph, Op, TensorId};

/// One application of a pass (or the import and lowering steps around them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassRecord {
    /// The step of the pipeline: `import`, `clean-up`, `layout`, `tidy-up` or `lower`.
    pub stage: &'static str,
    /// The pass (`onnx` for the import, `blob` for the lowering).
    pub name: &'static str,
    /// Fixed-point iteration of the stage, from 1 (the import and lowering are round 0).
    pub round: usize,
    /// Nodes before: ONNX nodes for the import, IR nodes otherwise.
    pub nodes_before: usize,
    /// Nodes after: blob ops for the lowering, IR nodes otherwise.
    pub nodes_after: usize,
    /// What changed, one short line each; empty when the pass changed nothing.
    pub changes: Vec<String>,
}

/// Most change lines kept per record; the rest are counted in a last line.
const MAX_CHANGES: usize = 64;

/// What a node looked like before a pass.
struct NodeSig {
    name: String,
    kind: String,
    inputs: Vec<TensorId>,
    output: TensorId,
}

/// The node names, op kinds and wiring of a graph, and how many tensors it had.
pub struct Snapshot {
    nodes: Vec<NodeSig>,
    tensors: usize,
}

/// A node's op for the log: `Conv2d`, `Relu`, `Add`, `Transpose[0, 2, 3, 1]`, ...
pub fn kind(op: &Op) -> String {
    match op {
        Op::Unary(u) => format!("{u:?}"),
        Op::Binary { op, .. } => format!("{op:?}"),
        Op::Transpose { perm } => format!("Transpose{perm:?}"),
        _ => op.name().to_string(),
    }
}

fn is_transpose(kind: &str) -> bool {
    kind.starts_with("Transpose")
}

impl Snapshot {
    /// Takes a snapshot of `g`.
    pub fn of(g: &Graph) -> Self {
        Snapshot {
            nodes: g
                .nodes
                .iter()
                .map(|n| NodeSig {
                    name: n.name.clone(),
                    kind: kind(&n.op),
                    inputs: n.inputs.clone(),
                    output: n.output,
                })
                .collect(),
            tensors: g.tensors.len(),
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the graph had no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// What changed from this snapshot to `g`, one short line each.
    pub fn diff(&self, g: &Graph) -> Vec<String> {
        let tname = |t: TensorId| g.tensor(t).name.as_str();
        let before: HashMap<&str, &NodeSig> =
            self.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let after: HashSet<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
        let mut gone: HashSet<&str> = before
            .keys()
            .copied()
            .filter(|n| !after.contains(n))
            .collect();
        let mut changes = Vec::new();
        for n in &g.nodes {
            let now = kind(&n.op);
            let Some(old) = before.get(n.name.as_str()) else {
                changes.push(self.added(&n.name, &now, &mut gone, &before));
                continue;
            };
            if old.kind != now {
                let cancelled = matches!(&n.op, Op::Reshape { shape }
                    if n.inputs.first().is_some_and(|&x| *shape == g.tensor(x).shape));
                changes.push(match (is_transpose(&old.kind), cancelled) {
                    (true, true) => format!("transpose {} cancelled (now an identity)", n.name),
                    (true, false) if now == "Reshape" => {
                        format!(
                            "transpose {} removed: it moves only size-1 dims, now a free Reshape",
                            n.name
                        )
                    }
                    _ => format!("{}: {} -> {now}", n.name, old.kind),
                });
            } else if old.inputs.len() != n.inputs.len() {
                let ins: Vec<&str> = n.inputs.iter().map(|&t| tname(t)).collect();
                changes.push(format!("{} now reads {}", n.name, ins.join(", ")));
            } else if old.inputs != n.inputs {
                let moved: Vec<String> = old
                    .inputs
                    .iter()
                    .zip(&n.inputs)
                    .filter(|(a, b)| a != b)
                    .map(|(&a, &b)| format!("{} instead of {}", tname(b), tname(a)))
                    .collect();
                changes.push(format!("{} now reads {}", n.name, moved.join(", ")));
            }
            if old.output != n.output {
                changes.push(format!("{} now writes {}", n.name, tname(n.output)));
            }
        }
        // What was removed without being fused, in the old order.
        for n in self.nodes.iter().filter(|n| gone.contains(n.name.as_str())) {
            changes.push(if is_transpose(&n.kind) {
                format!("transpose {} removed", n.name)
            } else {
                format!("{} ({}) removed", n.name, n.kind)
            });
        }
        let consts: Vec<&str> = g.tensors[self.tensors.min(g.tensors.len())..]
            .iter()
            .filter(|t| t.data.is_some())
            .map(|t| t.name.as_str())
            .collect();
        if !consts.is_empty() {
            changes.push(format!(
                "{} constant(s) added: {}",
                consts.len(),
                short_list(&consts)
            ));
        }
        cap(changes)
    }

    /// Describes node `name`, new after the pass: a fusion of two removed nodes (`a+b`), or an
    /// inserted node.
    fn added(
        &self,
        name: &str,
        now: &str,
        gone: &mut HashSet<&str>,
        before: &HashMap<&str, &NodeSig>,
    ) -> String {
        for (i, _) in name.match_indices('+') {
            let (head, tail) = (&name[..i], &name[i + 1..]);
            if gone.contains(head) && gone.contains(tail) {
                gone.remove(head);
                gone.remove(tail);
                let tail_kind = before.get(tail).map_or("", |n| n.kind.as_str());
                return if tail_kind == "BatchNorm" {
                    format!("BatchNorm {tail} folded into {head} -> {name}")
                } else {
                    format!("{head} + {tail} -> {name}")
                };
            }
        }
        if is_transpose(now) {
            format!("transpose {name} inserted: {now}")
        } else {
            format!("{name} ({now}) added")
        }
    }
}

/// `a, b, c, d, ... (N more)`.
pub fn short_list(names: &[&str]) -> String {
    const SHOWN: usize = 4;
    let mut s = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(", ... ({} more)", names.len() - SHOWN));
    }
    s
}

/// Keeps at most [`MAX_CHANGES`] lines, counting the rest in a last one.
fn cap(mut changes: Vec<String>) -> Vec<String> {
    if changes.len() > MAX_CHANGES {
        let more = changes.len() - (MAX_CHANGES - 1);
        changes.truncate(MAX_CHANGES - 1);
        changes.push(format!("... and {more} more"));
    }
    changes
}

/// The record of the import: ONNX nodes in, IR nodes out, and the ONNX nodes that became constants
/// (computed at conversion time) or other values.
pub fn import_record(summary: &crate::onnx::ImportSummary, g: &Graph) -> PassRecord {
    let mut changes = Vec::new();
    for (list, what) in [
        (&summary.folded, "folded into constants"),
        (&summary.aliased, "mapped onto existing values"),
    ] {
        if !list.is_empty() {
            let names: Vec<&str> = list.iter().map(String::as_str).collect();
            changes.push(format!(
                "{} {} node(s) {what}: {}",
                list.len(),
                if g.channels_last { "TFLite" } else { "ONNX" },
                short_list(&names)
            ));
        }
    }
    PassRecord {
        stage: "import",
        // The TFLite importer is the one that writes a channels-last graph.
        name: if g.channels_last { "tflite" } else { "onnx" },
        round: 0,
        nodes_before: summary.onnx_nodes,
        nodes_after: g.nodes.len(),
        changes,
    }
}

/// The record of a graph made by the model builder (`crate::build`) rather than imported.
pub fn build_record(g: &Graph) -> PassRecord {
    PassRecord {
        stage: "import",
        name: "builder",
        round: 0,
        nodes_before: g.nodes.len(),
        nodes_after: g.nodes.len(),
        changes: Vec::new(),
    }
}

/// The record of the lowering: IR nodes in, blob ops (`(name, op)` in execution order) out.
pub fn lower_record(g: &Graph, ops: &[(String, &'static str)]) -> PassRecord {
    let lowered: HashSet<&str> = ops.iter().map(|(n, _)| n.as_str()).collect();
    let ir: HashSet<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut changes: Vec<String> = g
        .nodes
        .iter()
        .filter(|n| !lowered.contains(n.name.as_str()))
        .map(|n| format!("{} ({}) is no op of the blob", n.name, kind(&n.op)))
        .collect();
    changes.extend(
        ops.iter()
            .filter(|(n, _)| !ir.contains(n.as_str()))
            .map(|(n, op)| format!("{n} ({op}) added")),
    );
    PassRecord {
        stage: "lower",
        name: "blob",
        round: 0,
        nodes_before: g.nodes.len(),
        nodes_after: ops.len(),
        changes: cap(changes),
    }
}
