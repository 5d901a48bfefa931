//! One importer per ONNX op, grouped by family like the runtime kernels (`core/src/ops/`): `nn`
//! (Conv, Gemm, MatMul, Softmax), `pool`, `math` (binary, variadic Min/Max/Sum/Mean, unary, Clip)
//! and `array` (Reshape, Flatten, Concat, Transpose, Pad, Identity/Dropout, Constant). [`import_node`]
//! dispatches on the op type through the `OPS` table ([`supported_ops`] lists it); anything else is
//! [`ConvertError::UnsupportedOp`].

pub mod array;
pub mod math;
pub mod nn;
pub mod pool;
pub mod quant;
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
    ("Abs", math::unary::import, "math/unary"),
    ("Acos", math::unary::import, "math/unary"),
    ("Acosh", math::unary::import, "math/unary"),
    ("Add", math::binary::import, "math/binary"),
    ("And", math::logical::import, "math/logical"),
    ("ArgMax", nn::arg_reduce::import, "nn/arg_reduce"),
    ("ArgMin", nn::arg_reduce::import, "nn/arg_reduce"),
    ("Asin", math::unary::import, "math/unary"),
    ("Asinh", math::unary::import, "math/unary"),
    ("Atan", math::unary::import, "math/unary"),
    ("Atanh", math::unary::import, "math/unary"),
    ("AveragePool", pool::avg_pool::import, "pool/avg_pool"),
    (
        "BatchNormalization",
        nn::batch_norm::import,
        "nn/batch_norm",
    ),
    ("Cast", array::cast::import, "array/cast"),
    ("CastLike", array::cast::import_like, "array/cast"),
    ("Ceil", math::unary::import, "math/unary"),
    ("Celu", math::unary::import, "math/unary"),
    ("Clip", math::clip::import, "math/clip"),
    ("Concat", array::concat::import, "array/concat"),
    ("Constant", array::constant::import, "array/constant"),
    (
        "ConstantOfShape",
        array::constant_of_shape::import,
        "array/constant_of_shape",
    ),
    ("Conv", nn::conv::import, "nn/conv"),
    (
        "ConvInteger",
        quant::conv_integer::import,
        "quant/conv_integer",
    ),
    (
        "ConvTranspose",
        nn::conv_transpose::import,
        "nn/conv_transpose",
    ),
    ("Cos", math::unary::import, "math/unary"),
    ("Cosh", math::unary::import, "math/unary"),
    (
        "DepthToSpace",
        array::depth_to_space::import_depth_to_space,
        "array/depth_to_space",
    ),
    (
        "DequantizeLinear",
        quant::dequantize_linear::import,
        "quant/dequantize_linear",
    ),
    ("Div", math::binary::import, "math/binary"),
    ("Dropout", array::identity::import, "array/identity"),
    ("Elu", math::unary::import, "math/unary"),
    ("Equal", math::compare::import, "math/compare"),
    ("Erf", math::unary::import, "math/unary"),
    ("Exp", math::unary::import, "math/unary"),
    ("Expand", array::expand::import_expand, "array/expand"),
    ("Flatten", array::flatten::import, "array/flatten"),
    ("Floor", math::unary::import, "math/unary"),
    ("Gather", array::gather::import, "array/gather"),
    ("Gelu", math::unary::import, "math/unary"),
    ("Gemm", nn::gemm::import, "nn/gemm"),
    (
        "GlobalAveragePool",
        pool::global_avg_pool::import,
        "pool/global_avg_pool",
    ),
    (
        "GlobalMaxPool",
        pool::global_max_pool::import,
        "pool/global_max_pool",
    ),
    ("Greater", math::compare::import, "math/compare"),
    ("GreaterOrEqual", math::compare::import, "math/compare"),
    ("HardSigmoid", math::unary::import, "math/unary"),
    ("HardSwish", math::unary::import, "math/unary"),
    ("Identity", array::identity::import, "array/identity"),
    (
        "InstanceNormalization",
        nn::instance_norm::import,
        "nn/instance_norm",
    ),
    (
        "LayerNormalization",
        nn::layer_norm::import,
        "nn/layer_norm",
    ),
    ("LeakyRelu", math::unary::import, "math/unary"),
    ("Less", math::compare::import, "math/compare"),
    ("LessOrEqual", math::compare::import, "math/compare"),
    ("Log", math::unary::import, "math/unary"),
    ("LogSoftmax", nn::softmax::import, "nn/softmax"),
    ("MatMul", nn::matmul::import, "nn/matmul"),
    (
        "MatMulInteger",
        quant::matmul_integer::import,
        "quant/matmul_integer",
    ),
    ("Max", math::variadic::import, "math/variadic"),
    ("MaxPool", pool::max_pool::import, "pool/max_pool"),
    ("Mean", math::variadic::import, "math/variadic"),
    ("Min", math::variadic::import, "math/variadic"),
    ("Mish", math::unary::import, "math/unary"),
    ("Mod", math::binary::import, "math/binary"),
    ("Mul", math::binary::import, "math/binary"),
    ("Neg", math::unary::import, "math/unary"),
    ("Not", math::logical::import_not, "math/logical"),
    ("Or", math::logical::import, "math/logical"),
    ("PRelu", math::binary::import, "math/binary"),
    ("Pad", array::pad::import, "array/pad"),
    ("Pow", math::binary::import, "math/binary"),
    (
        "QLinearConv",
        quant::qlinear_conv::import,
        "quant/qlinear_conv",
    ),
    (
        "QLinearMatMul",
        quant::qlinear_matmul::import,
        "quant/qlinear_matmul",
    ),
    (
        "QuantizeLinear",
        quant::quantize_linear::import,
        "quant/quantize_linear",
    ),
    ("Range", array::range::import, "array/range"),
    ("Reciprocal", math::unary::import, "math/unary"),
    ("ReduceL1", nn::reduce::import, "nn/reduce"),
    ("ReduceL2", nn::reduce::import, "nn/reduce"),
    ("ReduceLogSum", nn::reduce::import, "nn/reduce"),
    ("ReduceLogSumExp", nn::reduce::import, "nn/reduce"),
    ("ReduceMax", nn::reduce::import, "nn/reduce"),
    ("ReduceMean", nn::reduce::import, "nn/reduce"),
    ("ReduceMin", nn::reduce::import, "nn/reduce"),
    ("ReduceProd", nn::reduce::import, "nn/reduce"),
    ("ReduceSum", nn::reduce::import, "nn/reduce"),
    ("ReduceSumSquare", nn::reduce::import, "nn/reduce"),
    ("Relu", math::unary::import, "math/unary"),
    ("Reshape", array::reshape::import, "array/reshape"),
    ("Resize", array::resize::import, "array/resize"),
    ("Round", math::unary::import, "math/unary"),
    ("Selu", math::unary::import, "math/unary"),
    ("Shape", array::shape::import_shape, "array/shape"),
    ("Shrink", math::unary::import, "math/unary"),
    ("Sigmoid", math::unary::import, "math/unary"),
    ("Sign", math::unary::import, "math/unary"),
    ("Sin", math::unary::import, "math/unary"),
    ("Sinh", math::unary::import, "math/unary"),
    ("Size", array::shape::import_size, "array/shape"),
    ("Slice", array::slice::import, "array/slice"),
    ("Softmax", nn::softmax::import, "nn/softmax"),
    ("Softplus", math::unary::import, "math/unary"),
    ("Softsign", math::unary::import, "math/unary"),
    (
        "SpaceToDepth",
        array::depth_to_space::import_space_to_depth,
        "array/depth_to_space",
    ),
    ("Split", array::split::import, "array/split"),
    ("Sqrt", math::unary::import, "math/unary"),
    ("Squeeze", array::squeeze::import_squeeze, "array/squeeze"),
    ("Sub", math::binary::import, "math/binary"),
    ("Sum", math::variadic::import, "math/variadic"),
    ("Swish", math::unary::import, "math/unary"),
    ("Tan", math::unary::import, "math/unary"),
    ("Tanh", math::unary::import, "math/unary"),
    ("ThresholdedRelu", math::unary::import, "math/unary"),
    ("Tile", array::expand::import_tile, "array/expand"),
    ("Transpose", array::transpose::import, "array/transpose"),
    (
        "Unsqueeze",
        array::squeeze::import_unsqueeze,
        "array/squeeze",
    ),
    ("Upsample", array::resize::import_upsample, "array/resize"),
    ("Where", array::where_op::import, "array/where_op"),
    ("Xor", math::logical::import, "math/logical"),
];

/// Every op kind of the blob (`ember_core::schema::KIND_NAMES`, from the runtime's declaration of
/// its op set) with the ONNX ops whose nodes become it, after the graph passes and the quantizer: each
/// an ONNX op of `OPS`, or an importer's file for every op it imports. A test holds this list and the
/// runtime's together: an op declared in the runtime with no importer here fails it.
const BLOB_OPS: &[(&str, &[&str])] = &[
    ("Conv2d", &["Conv", "ConvInteger"]),
    ("FullyConnected", &["Gemm", "MatMul"]),
    ("MatMul", &["MatMul", "Gemm"]),
    (
        "Binary",
        &[
            "math/binary",
            "Min",
            "Max",
            "Sum",
            "Mean",
            "BatchNormalization",
        ],
    ),
    ("Unary", &["math/unary", "Clip"]),
    ("Softmax", &["Softmax"]),
    ("MaxPool2d", &["MaxPool"]),
    ("AvgPool2d", &["AveragePool"]),
    ("GlobalAvgPool", &["GlobalAveragePool"]),
    ("Concat", &["Concat"]),
    ("Transpose", &["Transpose", "DepthToSpace", "SpaceToDepth"]),
    ("Pad", &["Pad"]),
    (
        "Reshape",
        &[
            "Reshape",
            "Flatten",
            "Squeeze",
            "Unsqueeze",
            "Identity",
            "Dropout",
        ],
    ),
    ("LogSoftmax", &["LogSoftmax"]),
    ("Reduce", &["nn/reduce", "GlobalMaxPool"]),
    (
        "LayerNorm",
        &["LayerNormalization", "InstanceNormalization"],
    ),
    ("Slice", &["Slice", "Split"]),
    ("Gather", &["Gather"]),
    ("Broadcast", &["Expand", "Tile"]),
    ("Resize", &["Resize", "Upsample"]),
    ("Compare", &["math/compare"]),
    ("Logical", &["And", "Or", "Xor"]),
    ("Not", &["Not"]),
    ("Where", &["Where"]),
    ("Cast", &["Cast", "CastLike"]),
    ("ArgReduce", &["ArgMax", "ArgMin"]),
    ("ConvTranspose2d", &["ConvTranspose"]),
    ("QuantConv2d", &["Conv", "QLinearConv"]),
    ("QuantFullyConnected", &["Gemm", "MatMul", "QLinearMatMul"]),
    ("QuantAdd", &["Add"]),
    ("QuantMul", &["Mul"]),
    ("QuantAvgPool2d", &["AveragePool", "GlobalAveragePool"]),
    ("QuantMaxPool2d", &["MaxPool"]),
    ("QuantSoftmax", &["Softmax"]),
    ("Quantize", &["QuantizeLinear"]),
    ("Dequantize", &["DequantizeLinear"]),
    ("Requantize", &["QuantizeLinear"]),
    ("FullyConnectedW8", &["Gemm", "MatMul"]),
    ("Embedding", &["Gather"]),
];

/// The blob's op kinds with the ONNX ops that lead to each ([`BLOB_OPS`], importer files expanded to
/// their ops), in the order of the runtime's declaration.
pub fn blob_op_sources() -> Vec<(&'static str, Vec<&'static str>)> {
    BLOB_OPS
        .iter()
        .map(|&(kind, sources)| {
            let mut ops: Vec<&str> = Vec::new();
            for &source in sources {
                for &(name, _, file) in OPS {
                    if (name == source || file == source) && !ops.contains(&name) {
                        ops.push(name);
                    }
                }
            }
            (kind, ops)
        })
        .collect()
}

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
         anything else is an error naming the node, the op and the opset. Default domain only; quantized \
         models: docs/quantization.md.\n\n\
         | ONNX op | importer |\n| --- | --- |\n",
    );
    for (name, _, module) in OPS {
        page.push_str(&format!(
            "| {name} | `converter/src/onnx/ops/{module}.rs` |\n"
        ));
    }
    page.push_str(&format!("\n{} ops.\n", OPS.len()));
    page.push_str(
        "\n## The blob's ops\n\n\
         Each op kind of the blob (`OpKind`, declared once in `core/src/op_set.rs`) and the ONNX ops whose \
         importers lead to it, after the graph passes and the quantizer.\n\n\
         | blob op | from ONNX ops |\n| --- | --- |\n",
    );
    for (kind, ops) in blob_op_sources() {
        page.push_str(&format!("| {kind} | {} |\n", ops.join(", ")));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ONNX op or importer file [`BLOB_OPS`] names is in the importer table.
    #[test]
    fn blob_ops_name_importers_of_the_table() {
        for (kind, sources) in BLOB_OPS {
            assert!(!sources.is_empty(), "{kind}: no importer");
            for source in *sources {
                assert!(
                    OPS.iter()
                        .any(|(name, _, file)| name == source || file == source),
                    "{kind}: {source} is neither an op nor an importer file of OPS"
                );
            }
        }
    }
}
