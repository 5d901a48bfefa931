//! Adding a node to the graph the way every front end does (the ONNX importer, and the Rust model
//! builder `crate::build`): its dtype and shape inferred, and its value computed at conversion time
//! when its inputs are constants (a Reshape, Transpose or Slice of a constant, shape arithmetic, any
//! op the runtime's reference kernels can run on constants).

use super::fold::fold;
use super::{ConstData, Graph, Node, Op, TensorId};

/// `op` evaluated on `inputs` when they are all constants and `ir::eval` handles it (integer shape
/// arithmetic).
fn eval_consts(g: &Graph, op: &Op, inputs: &[TensorId]) -> Option<Result<ConstData, String>> {
    let xs = inputs
        .iter()
        .map(|&i| {
            let t = g.tensor(i);
            t.data.as_ref().map(|d| (t.shape.as_slice(), d))
        })
        .collect::<Option<Vec<_>>>()?;
    super::eval::eval_int(op, &xs)
}

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
    if let [x] = inputs.as_slice() {
        let t = g.tensor(*x);
        if let Some(d) = &t.data {
            // Inferring first also checks what `fold` relies on (a valid permutation).
            let shape = op.infer(&[&t.shape])?;
            if let Some(data) = fold(&op, d, &t.shape) {
                // A Reshape that keeps the leading dim keeps per-channel (axis 0) quantization.
                let quant = t.quant.clone().filter(|q| {
                    matches!(op, Op::Reshape { .. })
                        && (q.scales.len() == 1
                            || (q.axis == 0 && shape.first() == t.shape.first()))
                });
                let id = g.add_constant_of(out_name, shape, data, dtype);
                g.tensor_mut(id).quant = quant;
                return Ok(id);
            }
        }
    }
    let shapes: Vec<&[usize]> = inputs
        .iter()
        .map(|&i| g.tensor(i).shape.as_slice())
        .collect();
    let shape = op.infer(&shapes)?;
    super::op::core_op::validate(&op, &shapes, &dtypes, &shape, dtype)?;
    // Shape arithmetic only: other integer types must wrap at their own width, at run time.
    let shape_ints = dtypes.iter().all(|&t| t == super::DType::I64);
    if let Some(data) = eval_consts(g, &op, &inputs).filter(|_| shape_ints) {
        let data = data?;
        return Ok(g.add_constant_of(out_name, shape, data, dtype));
    }
    // Every input constant: run the op now, with the runtime's own kernels.
    let consts: Option<Vec<_>> = inputs
        .iter()
        .map(|&i| {
            let t = g.tensor(i);
            t.data.as_ref().map(|d| (t.shape.as_slice(), d, t.dtype))
        })
        .collect();
    if let Some(data) = consts.and_then(|c| super::const_eval::eval(&op, &c, &shape, dtype)) {
        return Ok(g.add_constant_of(out_name, shape, data, dtype));
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
