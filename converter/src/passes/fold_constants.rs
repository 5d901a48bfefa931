//! Constant folding: a node whose inputs are all constants becomes the constant the evaluator
//! ([`crate::ir::eval`]) computes, with the runtime's own kernels. Its output tensor keeps its id, name
//! and layout and takes the values; its readers then read a constant, and fold in turn (in the same
//! sweep, nodes being in execution order, or in a later round of the pipeline).
//!
//! The import already folds what it adds ([`crate::ir::emit::add_node`]); this pass folds what other
//! passes leave with constant inputs.

use crate::ir::eval::fold;
use crate::ir::Graph;
use crate::ConvertError;

/// Folds every node whose inputs are all constants (and that the evaluator evaluates).
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let mut changed = false;
    let mut i = 0;
    while i < g.nodes.len() {
        let n = &g.nodes[i];
        let out = g.tensor(n.output);
        let folded = fold(g, &n.op, &n.inputs, &out.shape, out.dtype).map_err(|reason| {
            ConvertError::Node {
                node: n.name.clone(),
                op: n.onnx_op.clone(),
                opset: g.opset,
                reason,
            }
        })?;
        let Some(folded) = folded else {
            i += 1;
            continue;
        };
        let n = g.nodes.remove(i);
        let t = g.tensor_mut(n.output);
        t.data = Some(folded.data);
        // An int8 activation's scale stays that of its values.
        t.quant = folded.quant.or(t.quant.take());
        changed = true;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use ember_core::ops::math::binary::BinaryOp;

    use super::*;
    use crate::ir::eval::tests::binary;
    use crate::ir::{ConstData, DType, Node, Op, TensorId};

    /// Adds node `name` computing `op` over `inputs`, without folding it (as a pass may leave it).
    fn node(g: &mut Graph, name: &str, op: Op, inputs: Vec<TensorId>) -> TensorId {
        let dtype = g.tensor(inputs[0]).dtype;
        let shapes: Vec<&[usize]> = inputs
            .iter()
            .map(|&i| g.tensor(i).shape.as_slice())
            .collect();
        let shape = op.infer(&shapes).unwrap();
        let output = g.add_activation_of(name, shape, dtype);
        g.nodes.push(Node {
            name: name.into(),
            onnx_op: "test".into(),
            op,
            inputs,
            output,
        });
        output
    }

    /// `x + (c * 2)`, where `c * 2` has constant inputs (as a pass may leave it): the product folds,
    /// exactly as the runtime computes it, and the sum stays.
    #[test]
    fn folds_a_node_with_constant_inputs() {
        let mut g = Graph::new(13);
        let x = g.add_activation("x", vec![3]);
        g.inputs.push(x);
        let c = g.add_constant("c", vec![3], ConstData::F32(vec![1.0, -2.5, 0.1]));
        let two = g.add_constant("two", vec![1], ConstData::F32(vec![2.0]));
        let product = node(&mut g, "product", binary(BinaryOp::Mul), vec![c, two]);
        let y = node(&mut g, "y", binary(BinaryOp::Add), vec![x, product]);
        g.outputs.push(y);
        assert!(run(&mut g).unwrap());
        g.check().unwrap();
        assert_eq!(g.nodes.len(), 1);
        assert_eq!(g.nodes[0].inputs, [x, product]);
        assert_eq!(g.const_f32(product), Some(&[2.0, -5.0, 0.2][..]));
        // A second round changes nothing.
        assert!(!run(&mut g).unwrap());
    }

    /// A chain of int64 shape arithmetic folds in one sweep, each result feeding the next, with
    /// integer division truncating toward zero; a division by zero is an error naming the node.
    #[test]
    fn folds_int64_shape_arithmetic() {
        let mut g = Graph::new(13);
        let dims = g.add_constant("dims", vec![2], ConstData::I64(vec![7, -7]));
        let two = g.add_constant("two", vec![1], ConstData::I64(vec![2]));
        let half = node(&mut g, "half", binary(BinaryOp::Div), vec![dims, two]);
        let less = node(&mut g, "less", binary(BinaryOp::Sub), vec![half, two]);
        let reshape = Op::Reshape { shape: vec![2, 1] };
        let out = node(&mut g, "out", reshape, vec![less]);
        g.outputs.push(out);
        assert!(run(&mut g).unwrap());
        assert!(g.nodes.is_empty());
        assert_eq!(g.tensor(out).data, Some(ConstData::I64(vec![1, -5])));
        assert_eq!(g.tensor(out).dtype, DType::I64);

        let zero = g.add_constant("zero", vec![1], ConstData::I64(vec![0]));
        node(&mut g, "broken", binary(BinaryOp::Div), vec![dims, zero]);
        let err = run(&mut g).unwrap_err().to_string();
        assert!(
            err.contains("broken") && err.contains("division by zero"),
            "{err}"
        );
    }
}
