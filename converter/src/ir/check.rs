//! The graph consistency check run after import and after every pass.

use std::collections::HashSet;

use super::{DType, Graph, TensorId, TensorLayout};

impl Graph {
    /// Verifies the IR's invariants: every node reads only graph inputs, constants and outputs of
    /// earlier nodes; every tensor has at most one producer; node outputs are f32 activations; each
    /// output shape is what the op infers from its input shapes; graph outputs are defined.
    pub fn check(&self) -> Result<(), String> {
        let in_range = |id: TensorId| id.0 < self.tensors.len();
        let mut defined: HashSet<TensorId> = HashSet::new();
        for &i in &self.inputs {
            if !in_range(i) || self.is_const(i) {
                return Err(format!("graph input {i:?} is not an activation"));
            }
            defined.insert(i);
        }
        for (id, t) in self.tensors.iter().enumerate() {
            if t.data.is_some() {
                defined.insert(TensorId(id));
            }
            if t.layout == TensorLayout::Nhwc && t.shape.len() != 4 {
                return Err(format!(
                    "tensor {} is NHWC but has rank {}",
                    t.name,
                    t.shape.len()
                ));
            }
        }
        for n in &self.nodes {
            let mut shapes = Vec::with_capacity(n.inputs.len());
            for &i in &n.inputs {
                if !in_range(i) || !defined.contains(&i) {
                    return Err(format!("node {} reads {i:?} before it is defined", n.name));
                }
                shapes.push(self.tensor(i).shape.as_slice());
            }
            if !in_range(n.output) || defined.contains(&n.output) {
                return Err(format!(
                    "node {} writes {:?}, which is already defined",
                    n.name, n.output
                ));
            }
            let out = self.tensor(n.output);
            let dtypes: Vec<DType> = n.inputs.iter().map(|&i| self.tensor(i).dtype).collect();
            let at_node = |e: String| format!("node {}: {e}", n.name);
            let disagree = |inferred: String, stored: String| {
                let op = n.op.name();
                let (node, output) = (&n.name, &out.name);
                format!("node {node} ({op}) infers {inferred} but its output {output} is {stored}")
            };
            let dtype = n.op.infer_dtype(&dtypes).map_err(at_node)?;
            if dtype != out.dtype {
                let stored = out.dtype.name().to_string();
                return Err(disagree(format!("dtype {}", dtype.name()), stored));
            }
            let inferred = n.op.infer(&shapes).map_err(at_node)?;
            if inferred != out.shape {
                return Err(disagree(
                    format!("{inferred:?}"),
                    format!("{:?}", out.shape),
                ));
            }
            super::op::core_op::validate(&n.op, &shapes, &dtypes, &out.shape, out.dtype)
                .map_err(|e| format!("node {} ({}): {e}", n.name, n.op.name()))?;
            defined.insert(n.output);
        }
        for &o in &self.outputs {
            if !in_range(o) || !defined.contains(&o) {
                return Err(format!("graph output {o:?} is never defined"));
            }
        }
        Ok(())
    }
}
