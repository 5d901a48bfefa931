//! One importer per ONNX op, grouped by family like the runtime kernels (`core/src/ops/`): `nn`
//! (Conv, Gemm, MatMul, Softmax), `pool`, `math` (binary, unary, Clip) and `array` (Reshape,
//! Flatten, Concat, Transpose, Pad, Identity/Dropout, Constant). [`import_node`] dispatches on the op
//! type through the `OPS` table ([`supported_ops`] lists it); anything else is [`ConvertError::UnsupportedOp`].

pub mod array;
pub mod math;
pub mod nn;
pub mod pool;
mod window;

use std::collections::HashMap;

use crate::onnx::is_default_domain;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Signature of an op importer.
type ImportFn = fn(&mut NodeCtx<'_>) -> Result<(), ConvertError>;

/// Every supported op of the default domain, sorted by name, with its importer.
const OPS: &[(&str, ImportFn)] = &[
    ("Add", math::binary::import),
    ("AveragePool", pool::avg_pool::import),
    ("Clip", math::clip::import),
    ("Concat", array::concat::import),
    ("Constant", array::constant::import),
    ("Conv", nn::conv::import),
    ("Div", math::binary::import),
    ("Dropout", array::identity::import),
    ("Flatten", array::flatten::import),
    ("Gemm", nn::gemm::import),
    ("GlobalAveragePool", pool::global_avg_pool::import),
    ("Identity", array::identity::import),
    ("MatMul", nn::matmul::import),
    ("MaxPool", pool::max_pool::import),
    ("Mul", math::binary::import),
    ("Pad", array::pad::import),
    ("Relu", math::unary::import),
    ("Reshape", array::reshape::import),
    ("Sigmoid", math::unary::import),
    ("Softmax", nn::softmax::import),
    ("Sub", math::binary::import),
    ("Tanh", math::unary::import),
    ("Transpose", array::transpose::import),
];

/// Names of the supported ONNX ops (default domain), sorted.
pub fn supported_ops() -> Vec<&'static str> {
    OPS.iter().map(|(name, _)| *name).collect()
}

/// Imports one node. `opsets` maps each imported domain (`""` for the default one) to its version.
pub fn import_node(
    ctx: &mut NodeCtx<'_>,
    opsets: &HashMap<String, i64>,
) -> Result<(), ConvertError> {
    let node = ctx.node;
    let importer = if is_default_domain(&node.domain) {
        OPS.iter()
            .find(|(name, _)| *name == node.op_type)
            .map(|(_, f)| *f)
    } else {
        None
    };
    match importer {
        Some(f) => f(ctx),
        None => {
            let domain = if is_default_domain(&node.domain) {
                ""
            } else {
                &node.domain
            };
            Err(ConvertError::UnsupportedOp {
                node: ctx.name.clone(),
                op: node.op_type.clone(),
                domain: domain.to_string(),
                opset: opsets.get(domain).copied().unwrap_or(0),
                supported: supported_ops().join(", "),
            })
        }
    }
}
