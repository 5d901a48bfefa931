//! The activation memory plan: alias groups (a Reshape's output shares its input's bytes), one
//! planner buffer per group, and the offsets the planner gives them.
//!
//! A Reshape is an alias, so the runtime's Reshape does nothing, except where aliasing would make a
//! graph output share bytes with a graph input: that Reshape gets its own buffer and copies.

use crate::plan::best::plan_offsets;
use crate::plan::{verify, Buffer};
use crate::ConvertError;

/// What the planner needs to know about one arena tensor.
#[derive(Clone, Copy, Debug)]
pub struct ArenaTensor {
    /// Bytes.
    pub bytes: usize,
    /// Producing op, or 0 for a graph input.
    pub first_use: usize,
    /// Last reading op; the op count for graph outputs.
    pub last_use: usize,
    /// True for graph inputs.
    pub is_input: bool,
    /// True for graph outputs.
    pub is_output: bool,
}

/// The result: an offset per arena tensor, the arena size and the lower bound.
#[derive(Clone, Debug)]
pub struct MemoryPlan {
    /// Offset of each arena tensor (same order as given).
    pub offsets: Vec<usize>,
    /// Group of each arena tensor (tensors of one group share their bytes).
    pub groups: Vec<usize>,
    /// Bytes of the activation region.
    pub total: usize,
    /// The lower bound for this set of buffers.
    pub lower_bound: usize,
    /// Bytes TFLM's greedy-by-size planner needs for the same buffers (`total` is never more).
    pub greedy_total: usize,
}

/// Plans `tensors`; `reshapes` lists `(input, output)` pairs (indices into `tensors`) of Reshape ops
/// between arena tensors, in execution order.
pub fn plan(
    tensors: &[ArenaTensor],
    reshapes: &[(usize, usize)],
) -> Result<MemoryPlan, ConvertError> {
    let mut root: Vec<usize> = (0..tensors.len()).collect();
    for &(x, y) in reshapes {
        let r = find(&root, x);
        // Graph inputs have no producer, so a group holds a graph input only at its root.
        if tensors[y].is_output && tensors[r].is_input {
            continue;
        }
        root[y] = r;
    }
    let roots: Vec<usize> = (0..tensors.len()).map(|i| find(&root, i)).collect();
    let mut group_of_root = vec![usize::MAX; tensors.len()];
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut groups = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        let r = roots[i];
        if group_of_root[r] == usize::MAX {
            group_of_root[r] = buffers.len();
            buffers.push(Buffer {
                size: t.bytes,
                first_use: t.first_use,
                last_use: t.last_use,
            });
        }
        let g = group_of_root[r];
        let b = &mut buffers[g];
        b.size = b.size.max(t.bytes);
        b.first_use = b.first_use.min(t.first_use);
        b.last_use = b.last_use.max(t.last_use);
        groups.push(g);
    }
    let chosen = plan_offsets(&buffers);
    let placement = chosen.placement;
    verify(&buffers, &placement)
        .map_err(|e| ConvertError::internal(format!("memory plan: {e}")))?;
    Ok(MemoryPlan {
        offsets: groups.iter().map(|&g| placement.offsets[g]).collect(),
        groups,
        total: placement.total,
        lower_bound: chosen.lower_bound,
        greedy_total: chosen.greedy_total,
    })
}

fn find(root: &[usize], mut i: usize) -> usize {
    while root[i] != i {
        i = root[i];
    }
    i
}
