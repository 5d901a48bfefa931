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

/// Every supported op of the default domain, sorted by name, with its importer and the importer's file
/// (relative to this folder, for the generated docs).
const OPS: &[(&str, ImportFn, &str)] = &[
    ("Add", math::binary::import, "math/binary"),
    ("AveragePool", pool::avg_pool::import, "pool/avg_pool"),
    ("Clip", math::clip::import, "math/clip"),
    ("Concat", array::concat::import, "array/concat"),
    ("Constant", array::constant::import, "array/constant"),
    ("Conv", nn::conv::import, "nn/conv"),
    ("Div", math::binary::import, "math/binary"),
    ("Dropout", array::identity::import, "array/identity"),
    ("Flatten", array::flatten::import, "array/flatten"),
    ("Gemm", nn::gemm::import, "nn/gemm"),
    (
        "GlobalAveragePool",
        pool::global_avg_pool::import,
        "pool/global_avg_pool",
    ),
    ("Identity", array::identity::import, "array/identity"),
    ("MatMul", nn::matmul::import, "nn/matmul"),
    ("MaxPool", pool::max_pool::import, "pool/max_pool"),
    ("Mul", math::binary::import, "math/binary"),
    ("Pad", array::pad::import, "array/pad"),
    ("Relu", math::unary::import, "math/unary"),
    ("Reshape", array::reshape::import, "array/reshape"),
    ("Sigmoid", math::unary::import, "math/unary"),
    ("Softmax", nn::softmax::import, "nn/softmax"),
    ("Sub", math::binary::import, "math/binary"),
    ("Tanh", math::unary::import, "math/unary"),
    ("Transpose", array::transpose::import, "array/transpose"),
];

/// Names of the supported ONNX ops (default domain), sorted.
pub fn supported_ops() -> Vec<&'static str> {
    OPS.iter().map(|(name, _, _)| *name).collect()
}

/// The supported-ops page (`docs/supported-ops.md`), generated from `OPS` so it cannot drift from the code;
/// a test compares the committed page with this.
pub fn supported_ops_markdown() -> String {
    let mut page = String::from(
        "# Supported ONNX ops\n\n\
         Generated from `converter/src/onnx/ops/mod.rs` by `EMBER_BLESS=1 cargo test -p ember-convert --test \
         supported_ops_doc`; do not edit by hand. Each op's importer documents the attributes it accepts;\n\
         anything else is an error naming the node, the op and the opset. Default domain only, float32.\n\n\
         | ONNX op | importer |\n| --- | --- |\n",
    );
    for (name, _, module) in OPS {
        page.push_str(&format!(
            "| {name} | `converter/src/onnx/ops/{module}.rs` |\n"
        ));
    }
    page.push_str(&format!("\n{} ops.\n", OPS.len()));
    page
}

/// Imports one node. `opsets` maps each imported domain (`""` for the default one) to its version.
pub fn import_node(
    ctx: &mut NodeCtx<'_>,
    opsets: &HashMap<String, i64>,
) -> Result<(), ConvertError> {
    let node = ctx.node;
    let importer = if is_default_domain(&node.domain) {
        OPS.iter()
            .find(|(name, _, _)| *name == node.op_type)
            .map(|(_, f, _)| *f)
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
