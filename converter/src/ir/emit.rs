//! Adding a node to the graph the way every front end does (the ONNX importer, and the Rust model
//! builder `crate::build`): its dtype and shape inferred, and its value computed at conversion time
//! when its inputs are constants ([`super::eval`]), so that importers that need a constant (a
//! Reshape's shape computed by `Shape -> Gather -> Concat`) read it.

use super::{Graph, Node, Op, TensorId};

/// Adds node `node_name` computing `op` over `inputs` into a new tensor named `out_name` (renamed if
/// taken), or the constant it evaluates to. `source` is what the node came from (the ONNX op type, or
/// the builder's layer kind), for messages. An error says why the inputs do not fit the op.
pub fn add_node(
    g: &mut Graph,
    node_name: &str,
    out_name: &str,
    source: &str,
    op: Op,
    inputs: Vec<TensorId>,
) -> Result<TensorId, String> {
    let dtypes: Vec<super::DType> = inputs.iter().map(|&i| g.tensor(i).dtype).collect();
    let dtype = op.infer_dtype(&dtypes)?;
    let shapes: Vec<&[usize]> = inputs
        .iter()
        .map(|&i| g.tensor(i).shape.as_slice())
        .collect();
    let shape = op.infer(&shapes)?;
    // An output whose element count overflows is an error here, before any pass multiplies its dims.
    super::shape::numel(&shape)?;
    super::op::core_op::validate(&op, &shapes, &dtypes, &shape, dtype)?;
    if let Some(folded) = super::eval::fold(g, &op, &inputs, &shape, dtype)? {
        let id = g.add_constant_of(out_name, shape, folded.data, dtype);
        g.tensor_mut(id).quant = folded.quant;
        return Ok(id);
    }
    let out = g.add_activation_of(out_name, shape, dtype);
    g.nodes.push(Node {
        name: node_name.to_string(),
        onnx_op: source.to_string(),
        op,
        inputs,
        output: out,
    });
    Ok(out)
}
