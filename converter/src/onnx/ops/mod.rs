//! One importer per ONNX op, grouped by family like the runtime kernels (`core/src/ops/`): `nn`
//! (Conv, Gemm, MatMul, Softmax), `pool`, `math` (binary, variadic Min/Max/Sum/Mean, unary, Clip)
//! and `array` (Reshape, Flatten, Concat, Transpose, Pad, Identity/Dropout, Constant). [`import_node`]
//! dispatches on the op type through the `OPS` table ([`supported_ops`] lists it); anything else is
//! [`ConvertError::UnsupportedOp`].
//!
//! Each row of `OPS` declares the opsets its importer supports and how many inputs and outputs a
//! node may have; [`import_node`] checks both before it calls the importer, and afterwards rejects
//! every attribute of the node that the importer never asked for, unless `IGNORED_ATTRIBUTES` lists
//! it as safe to ignore.

pub mod array;
pub mod control;
pub mod math;
pub mod nn;
pub mod pool;
pub mod quant;
mod window;

use std::collections::HashMap;
use std::fmt;

use crate::onnx::node::NodeCtx;
use crate::onnx::{is_default_domain, MIN_OPSET};
use crate::ConvertError;

/// Signature of an op importer.
type ImportFn = fn(&mut NodeCtx<'_>) -> Result<(), ConvertError>;

/// The default-domain opsets an importer supports: from `since` (the ONNX version of the op whose
/// semantics it implements, never below [`MIN_OPSET`]) on, up to `until`
/// where a later version of the op changed something the importer does not follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opsets {
    /// The first supported opset.
    pub since: i64,
    /// The last supported opset, if the op's later versions are not.
    pub until: Option<i64>,
}

impl Opsets {
    /// True if a model of default-domain opset `opset` is in the range.
    pub fn contains(&self, opset: i64) -> bool {
        opset >= self.since && self.until.is_none_or(|u| opset <= u)
    }
}

impl fmt::Display for Opsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.until {
            Some(u) => write!(f, "{} to {u}", self.since),
            None => write!(f, "{} and later", self.since),
        }
    }
}

/// How many inputs (or outputs) a node may have, counted up to its last named one (an empty name
/// is an omitted optional one): `min` to `max`, or any number from `min` when `max` is `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arity {
    /// The fewest.
    pub min: usize,
    /// The most, if bounded.
    pub max: Option<usize>,
}

impl Arity {
    /// True if `n` is in the range.
    pub fn contains(&self, n: usize) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.max {
            Some(m) if m == self.min => write!(f, "{m}"),
            Some(m) => write!(f, "{} to {m}", self.min),
            None => write!(f, "{} or more", self.min),
        }
    }
}

/// One supported op of the default domain: what [`import_node`] checks, and its importer.
pub struct OpSpec {
    /// The ONNX op type.
    pub name: &'static str,
    /// The opsets the importer supports.
    pub opsets: Opsets,
    /// How many inputs a node may have (over all supported opsets).
    pub inputs: Arity,
    /// How many outputs a node may have.
    pub outputs: Arity,
    /// The importer.
    import: ImportFn,
    /// The importer's file, relative to this folder (for the generated docs).
    pub file: &'static str,
}

/// The rows of `OPS`, one line per op: the ONNX op type, `[opsets]` (`[7..]`, or `[7..=9]` where
/// later versions are not supported), `[inputs]` and `[outputs]` (`[2]`, `[1..=3]`, or `[1..]` for
/// any number), and the importer as `family::file::function` (which also names its file).
macro_rules! op_table {
    ($($name:ident $opsets:tt $inputs:tt $outputs:tt $family:ident::$file:ident::$import:ident;)*) => {
        &[$(OpSpec {
            name: stringify!($name),
            opsets: op_table!(@opsets $opsets),
            inputs: op_table!(@arity $inputs),
            outputs: op_table!(@arity $outputs),
            import: $family::$file::$import,
            file: concat!(stringify!($family), "/", stringify!($file)),
        },)*]
    };
    (@opsets [$since:literal ..]) => { Opsets { since: $since, until: None } };
    (@opsets [$since:literal ..= $until:literal]) => {
        Opsets { since: $since, until: Some($until) }
    };
    (@arity [$n:literal]) => { Arity { min: $n, max: Some($n) } };
    (@arity [$min:literal ..= $max:literal]) => { Arity { min: $min, max: Some($max) } };
    (@arity [$min:literal ..]) => { Arity { min: $min, max: None } };
}

/// Every supported op of the default domain, sorted by name. The opsets start at the op's first
/// ONNX version (or [`MIN_OPSET`]); an importer that reads an attribute which later became an input
/// branches on the opset itself. The input counts cover every supported version (e.g. Clip's bounds
/// are attributes before opset 11 and inputs after).
#[rustfmt::skip]
const OPS: &[OpSpec] = op_table! {
    // op                  opsets     inputs    outputs   importer
    Abs                    [7..]      [1]       [1]       math::unary::import;
    Acos                   [7..]      [1]       [1]       math::unary::import;
    Acosh                  [9..]      [1]       [1]       math::unary::import;
    Add                    [7..]      [2]       [1]       math::binary::import;
    And                    [7..]      [2]       [1]       math::logical::import;
    ArgMax                 [7..]      [1]       [1]       nn::arg_reduce::import;
    ArgMin                 [7..]      [1]       [1]       nn::arg_reduce::import;
    Asin                   [7..]      [1]       [1]       math::unary::import;
    Asinh                  [9..]      [1]       [1]       math::unary::import;
    Atan                   [7..]      [1]       [1]       math::unary::import;
    Atanh                  [9..]      [1]       [1]       math::unary::import;
    AveragePool            [7..]      [1]       [1]       pool::avg_pool::import;
    BatchNormalization     [7..]      [5]       [1..=5]   nn::batch_norm::import;
    BlackmanWindow         [17..]     [1]       [1]       math::signal::import_window;
    Cast                   [7..]      [1]       [1]       array::cast::import;
    CastLike               [15..]     [2]       [1]       array::cast::import_like;
    Ceil                   [7..]      [1]       [1]       math::unary::import;
    Celu                   [12..]     [1]       [1]       math::unary::import;
    Clip                   [7..]      [1..=3]   [1]       math::clip::import;
    Concat                 [7..]      [1..]     [1]       array::concat::import;
    Constant               [7..]      [0]       [1]       array::constant::import;
    ConstantOfShape        [9..]      [1]       [1]       array::constant_of_shape::import;
    Conv                   [7..]      [2..=3]   [1]       nn::conv::import;
    ConvInteger            [10..]     [2..=4]   [1]       quant::conv_integer::import;
    ConvTranspose          [7..]      [2..=3]   [1]       nn::conv_transpose::import;
    Cos                    [7..]      [1]       [1]       math::unary::import;
    Cosh                   [9..]      [1]       [1]       math::unary::import;
    CumSum                 [11..]     [2]       [1]       math::cumsum::import;
    DFT                    [17..]     [1..=3]   [1]       math::signal::import_dft;
    DepthToSpace           [7..]      [1]       [1]       array::depth_to_space::import_depth_to_space;
    DequantizeLinear       [10..]     [2..=3]   [1]       quant::dequantize_linear::import;
    Div                    [7..]      [2]       [1]       math::binary::import;
    Dropout                [7..]      [1..=3]   [1..=2]   array::identity::import;
    Einsum                 [12..]     [1..]     [1]       nn::einsum::import;
    Elu                    [7..]      [1]       [1]       math::unary::import;
    Equal                  [7..]      [2]       [1]       math::compare::import;
    Erf                    [9..]      [1]       [1]       math::unary::import;
    Exp                    [7..]      [1]       [1]       math::unary::import;
    Expand                 [8..]      [2]       [1]       array::expand::import_expand;
    Flatten                [7..]      [1]       [1]       array::flatten::import;
    Floor                  [7..]      [1]       [1]       math::unary::import;
    GRU                    [7..]      [3..=6]   [1..=2]   nn::rnn::import;
    Gather                 [7..]      [2]       [1]       array::gather::import;
    GatherElements         [11..]     [2]       [1]       array::gather_scatter::import_gather_elements;
    GatherND               [11..]     [2]       [1]       array::gather_scatter::import_gather_nd;
    Gelu                   [20..]     [1]       [1]       math::unary::import;
    Gemm                   [7..]      [2..=3]   [1]       nn::gemm::import;
    GlobalAveragePool      [7..]      [1]       [1]       pool::global_avg_pool::import;
    GlobalMaxPool          [7..]      [1]       [1]       pool::global_max_pool::import;
    Greater                [7..]      [2]       [1]       math::compare::import;
    GreaterOrEqual         [12..]     [2]       [1]       math::compare::import;
    GroupNormalization     [21..]     [3]       [1]       nn::instance_norm::import;
    HammingWindow          [17..]     [1]       [1]       math::signal::import_window;
    HannWindow             [17..]     [1]       [1]       math::signal::import_window;
    HardSigmoid            [7..]      [1]       [1]       math::unary::import;
    HardSwish              [14..]     [1]       [1]       math::unary::import;
    Hardmax                [7..]      [1]       [1]       nn::softmax::import;
    Identity               [7..]      [1]       [1]       array::identity::import;
    If                     [7..]      [1]       [1..]     control::branch::import;
    InstanceNormalization  [7..]      [3]       [1]       nn::instance_norm::import;
    IsInf                  [10..]     [1]       [1]       math::is_nan::import_is_inf;
    IsNaN                  [9..]      [1]       [1]       math::is_nan::import_is_nan;
    LSTM                   [7..]      [3..=8]   [1..=3]   nn::rnn::import;
    LayerNormalization     [17..]     [2..=3]   [1..=3]   nn::layer_norm::import;
    LeakyRelu              [7..]      [1]       [1]       math::unary::import;
    Less                   [7..]      [2]       [1]       math::compare::import;
    LessOrEqual            [12..]     [2]       [1]       math::compare::import;
    Log                    [7..]      [1]       [1]       math::unary::import;
    LogSoftmax             [7..]      [1]       [1]       nn::softmax::import;
    Loop                   [11..]     [0..]     [1..]     control::loops::import_loop;
    LpNormalization        [7..]      [1]       [1]       nn::lp_norm::import;
    MatMul                 [7..]      [2]       [1]       nn::matmul::import;
    MatMulInteger          [10..]     [2..=4]   [1]       quant::matmul_integer::import;
    Max                    [7..]      [1..]     [1]       math::variadic::import;
    MaxPool                [7..]      [1]       [1..=2]   pool::max_pool::import;
    Mean                   [7..]      [1..]     [1]       math::variadic::import;
    MelWeightMatrix        [17..]     [5]       [1]       math::signal::import_mel_weight_matrix;
    Min                    [7..]      [1..]     [1]       math::variadic::import;
    Mish                   [18..]     [1]       [1]       math::unary::import;
    Mod                    [10..]     [2]       [1]       math::binary::import;
    Mul                    [7..]      [2]       [1]       math::binary::import;
    Neg                    [7..]      [1]       [1]       math::unary::import;
    NonMaxSuppression      [10..]     [2..=5]   [1]       nn::non_max_suppression::import;
    NonZero                [9..]      [1]       [1]       array::non_zero::import;
    Not                    [7..]      [1]       [1]       math::logical::import_not;
    OneHot                 [9..]      [3]       [1]       array::one_hot::import;
    Or                     [7..]      [2]       [1]       math::logical::import;
    PRelu                  [7..]      [2]       [1]       math::binary::import;
    Pad                    [7..]      [1..=4]   [1]       array::pad::import;
    Pow                    [7..]      [2]       [1]       math::binary::import;
    QLinearConv            [10..]     [8..=9]   [1]       quant::qlinear_conv::import;
    QLinearMatMul          [10..]     [8]       [1]       quant::qlinear_matmul::import;
    QuantizeLinear         [10..]     [2..=3]   [1]       quant::quantize_linear::import;
    RMSNormalization       [23..]     [2]       [1]       nn::rms_norm::import;
    RNN                    [7..]      [3..=6]   [1..=2]   nn::rnn::import;
    Range                  [11..]     [3]       [1]       array::range::import;
    Reciprocal             [7..]      [1]       [1]       math::unary::import;
    ReduceL1               [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceL2               [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceLogSum           [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceLogSumExp        [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceMax              [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceMean             [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceMin              [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceProd             [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceSum              [7..]      [1..=2]   [1]       nn::reduce::import;
    ReduceSumSquare        [7..]      [1..=2]   [1]       nn::reduce::import;
    Relu                   [7..]      [1]       [1]       math::unary::import;
    Reshape                [7..]      [2]       [1]       array::reshape::import;
    Resize                 [10..]     [1..=4]   [1]       array::resize::import;
    Round                  [11..]     [1]       [1]       math::unary::import;
    STFT                   [17..]     [2..=4]   [1]       math::signal::import_stft;
    Scan                   [9..]      [1..]     [1..]     control::loops::import_scan;
    ScatterElements        [11..]     [3]       [1]       array::gather_scatter::import_scatter_elements;
    ScatterND              [11..]     [3]       [1]       array::gather_scatter::import_scatter_nd;
    Selu                   [7..]      [1]       [1]       math::unary::import;
    Shape                  [7..]      [1]       [1]       array::shape::import_shape;
    Shrink                 [9..]      [1]       [1]       math::unary::import;
    Sigmoid                [7..]      [1]       [1]       math::unary::import;
    Sign                   [9..]      [1]       [1]       math::unary::import;
    Sin                    [7..]      [1]       [1]       math::unary::import;
    Sinh                   [9..]      [1]       [1]       math::unary::import;
    Size                   [7..]      [1]       [1]       array::shape::import_size;
    Slice                  [7..]      [1..=5]   [1]       array::slice::import;
    Softmax                [7..]      [1]       [1]       nn::softmax::import;
    Softplus               [7..]      [1]       [1]       math::unary::import;
    Softsign               [7..]      [1]       [1]       math::unary::import;
    SpaceToDepth           [7..]      [1]       [1]       array::depth_to_space::import_space_to_depth;
    Split                  [7..]      [1..=2]   [1..]     array::split::import;
    Sqrt                   [7..]      [1]       [1]       math::unary::import;
    Squeeze                [7..]      [1..=2]   [1]       array::squeeze::import_squeeze;
    Sub                    [7..]      [2]       [1]       math::binary::import;
    Sum                    [7..]      [1..]     [1]       math::variadic::import;
    Swish                  [24..]     [1]       [1]       math::unary::import;
    Tan                    [7..]      [1]       [1]       math::unary::import;
    Tanh                   [7..]      [1]       [1]       math::unary::import;
    ThresholdedRelu        [10..]     [1]       [1]       math::unary::import;
    Tile                   [7..]      [2]       [1]       array::expand::import_tile;
    TopK                   [7..]      [1..=2]   [1..=2]   nn::top_k::import;
    Transpose              [7..]      [1]       [1]       array::transpose::import;
    Trilu                  [14..]     [1..=2]   [1]       array::trilu::import;
    Unsqueeze              [7..]      [1..=2]   [1]       array::squeeze::import_unsqueeze;
    Upsample               [7..=9]    [1..=2]   [1]       array::resize::import_upsample;
    Where                  [9..]      [3]       [1]       array::where_op::import;
    Xor                    [7..]      [2]       [1]       math::logical::import;
};

/// Attributes that importers leave unread because no value of theirs changes what Ember computes,
/// as `(op, attribute, why)`, sorted by op. Any other attribute an importer does not read is an
/// error. An attribute whose non-default values matter belongs in its importer, read and checked.
const IGNORED_ATTRIBUTES: &[(&str, &str, &str)] = &[
    (
        "BatchNormalization",
        "momentum",
        "it updates the running statistics in training only",
    ),
    (
        "Cast",
        "round_mode",
        "it applies to float8 targets only, which Ember rejects",
    ),
    (
        "Cast",
        "saturate",
        "it applies to float8 targets only, which Ember rejects",
    ),
    (
        "CastLike",
        "round_mode",
        "it applies to float8 targets only, which Ember rejects",
    ),
    (
        "CastLike",
        "saturate",
        "it applies to float8 targets only, which Ember rejects",
    ),
    ("Dropout", "ratio", "Dropout drops nothing at inference"),
    ("Dropout", "seed", "Dropout drops nothing at inference"),
    (
        "QuantizeLinear",
        "saturate",
        "it applies to float8 outputs only, which Ember rejects",
    ),
    (
        "Resize",
        "extrapolation_value",
        "only coordinate_transformation_mode=tf_crop_and_resize reads it, which Ember rejects",
    ),
];

/// Every op kind of the blob (`ember_core::schema::KIND_NAMES`, from the runtime's declaration of
/// its op set) with the ONNX ops whose nodes become it, after the graph passes and the quantizer: each
/// an ONNX op of `OPS`, or an importer's file for every op it imports. A test holds this list and the
/// runtime's together: an op declared in the runtime with no importer here fails it.
const BLOB_OPS: &[(&str, &[&str])] = &[
    ("Conv2d", &["Conv", "ConvInteger"]),
    ("FullyConnected", &["Gemm", "MatMul", "Einsum"]),
    ("MatMul", &["MatMul", "Gemm", "Einsum"]),
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
    (
        "Reduce",
        &["nn/reduce", "GlobalMaxPool", "Einsum", "LpNormalization"],
    ),
    (
        "LayerNorm",
        &[
            "LayerNormalization",
            "InstanceNormalization",
            "GroupNormalization",
        ],
    ),
    ("Slice", &["Slice", "Split"]),
    ("Gather", &["Gather"]),
    ("Broadcast", &["Expand", "Tile"]),
    ("Resize", &["Resize", "Upsample"]),
    (
        "Compare",
        &["math/compare", "math/is_nan", "LpNormalization", "OneHot"],
    ),
    ("Logical", &["And", "Or", "Xor"]),
    ("Not", &["Not"]),
    ("Where", &["Where", "LpNormalization", "OneHot"]),
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
    ("RmsNorm", &["RMSNormalization"]),
    ("Hardmax", &["Hardmax"]),
    ("Trilu", &["Trilu"]),
    ("CumSum", &["CumSum"]),
    ("Rnn", &["GRU", "LSTM", "RNN"]),
    (
        "GatherScatterElements",
        &["GatherElements", "ScatterElements"],
    ),
    ("GatherScatterNd", &["GatherND", "ScatterND"]),
    ("TopK", &["TopK"]),
    ("NonZero", &["NonZero"]),
    ("NonMaxSuppression", &["NonMaxSuppression"]),
    ("QuantLut", &["math/unary", "Clip"]),
    ("Dft", &["DFT", "STFT"]),
    ("Control", &["Loop", "Scan", "If"]),
];

/// The blob's op kinds with the ONNX ops that lead to each ([`BLOB_OPS`], importer files expanded to
/// their ops), in the order of the runtime's declaration.
pub fn blob_op_sources() -> Vec<(&'static str, Vec<&'static str>)> {
    BLOB_OPS
        .iter()
        .map(|&(kind, sources)| {
            let mut ops: Vec<&str> = Vec::new();
            for &source in sources {
                for op in OPS {
                    if (op.name == source || op.file == source) && !ops.contains(&op.name) {
                        ops.push(op.name);
                    }
                }
            }
            (kind, ops)
        })
        .collect()
}

/// Names of the supported ONNX ops (default domain), sorted.
pub fn supported_ops() -> Vec<&'static str> {
    OPS.iter().map(|op| op.name).collect()
}

/// The supported-ops page (`docs/supported-ops.md`), generated from `OPS` so it cannot drift from
/// the code; a test compares the committed page with this.
pub fn supported_ops_markdown() -> String {
    let mut page = format!(
        "# Supported ONNX ops\n\n\
         Generated from `converter/src/onnx/ops/mod.rs` by `EMBER_BLESS=1 cargo test -p ember-convert \
         --test converter supported_ops_doc`; do not edit by hand. Default domain only; quantized models: \
         docs/quantization.md.\n\n\
         Each op is imported at the model opsets listed (from the op's ONNX version whose semantics \
         the importer implements, or {MIN_OPSET}, the oldest opset Ember reads), with the number of \
         inputs and outputs listed (an omitted optional one, an empty name, counts only before a \
         named one). A node outside them is an error naming the node, the op, the opset and the \
         range. Each importer documents the attributes it reads; any other attribute of a node is an \
         error naming it, except the few below that are safe to ignore.\n\n\
         | ONNX op | opsets | inputs | outputs | importer |\n| --- | --- | --- | --- | --- |\n",
    );
    for op in OPS {
        page.push_str(&format!(
            "| {} | {} | {} | {} | `converter/src/onnx/ops/{}.rs` |\n",
            op.name, op.opsets, op.inputs, op.outputs, op.file
        ));
    }
    page.push_str(&format!("\n{} ops.\n", OPS.len()));
    page.push_str(
        "\n## Attributes that are ignored\n\n\
         No value of these changes what Ember computes, so the importers do not read them.\n\n\
         | ONNX op | attribute | why |\n| --- | --- | --- |\n",
    );
    for (op, attribute, why) in IGNORED_ATTRIBUTES {
        page.push_str(&format!("| {op} | {attribute} | {why} |\n"));
    }
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

/// Imports one node: checks the model's opset and the node's input and output counts against the
/// op's row of `OPS`, runs the importer, and then rejects any attribute it did not read.
/// `opsets` maps each imported domain (`""` for the default one) to its version.
pub fn import_node(
    ctx: &mut NodeCtx<'_>,
    opsets: &HashMap<String, i64>,
) -> Result<(), ConvertError> {
    let node = ctx.node;
    let spec = if is_default_domain(&node.domain) {
        OPS.iter().find(|op| op.name == node.op_type)
    } else {
        None
    };
    let Some(spec) = spec else {
        let domain = if is_default_domain(&node.domain) {
            ""
        } else {
            &node.domain
        };
        return Err(ConvertError::UnsupportedOp {
            node: ctx.name.clone(),
            op: node.op_type.clone(),
            domain: domain.to_string(),
            opset: opsets.get(domain).copied().unwrap_or(0),
            supported: supported_ops().join(", "),
        });
    };
    check_opset(ctx, spec)?;
    check_arity(ctx, spec.name, "input", &node.input, spec.inputs)?;
    check_arity(ctx, spec.name, "output", &node.output, spec.outputs)?;
    (spec.import)(ctx)?;
    check_attributes_read(ctx, spec.name)
}

/// The model's opset must be one the importer supports.
fn check_opset(ctx: &NodeCtx<'_>, spec: &OpSpec) -> Result<(), ConvertError> {
    if spec.opsets.contains(ctx.opset) {
        return Ok(());
    }
    let (op, opsets) = (spec.name, spec.opsets);
    let target = if ctx.opset < opsets.since {
        opsets.since
    } else {
        opsets.until.unwrap_or(opsets.since)
    };
    Err(ctx.err(format!(
        "opset {} is not supported by Ember's importer of {op}, which reads {op} at opsets \
         {opsets}; re-export the model at opset {target}, or convert it with \
         onnx.version_converter.convert_version(model, {target})",
        ctx.opset
    )))
}

/// The node's inputs or outputs (`names`), counted up to the last named one, must fit `arity`.
fn check_arity(
    ctx: &NodeCtx<'_>,
    op: &str,
    what: &str,
    names: &[String],
    arity: Arity,
) -> Result<(), ConvertError> {
    let n = names
        .iter()
        .rposition(|n| !n.is_empty())
        .map_or(0, |i| i + 1);
    if arity.contains(n) {
        return Ok(());
    }
    let plural = |one: bool| if one { "" } else { "s" };
    let exactly_one = arity.min == 1 && arity.max == Some(1);
    Err(ctx.err(format!(
        "the node has {n} {what}{}, but {op} takes {arity} {what}{}",
        plural(n == 1),
        plural(exactly_one)
    )))
}

/// Every attribute of the node must have been read by its importer, or be one of
/// `IGNORED_ATTRIBUTES`.
fn check_attributes_read(ctx: &NodeCtx<'_>, op: &str) -> Result<(), ConvertError> {
    let unread: Vec<&str> = ctx
        .unread_attributes()
        .into_iter()
        .filter(|&a| {
            !IGNORED_ATTRIBUTES
                .iter()
                .any(|&(o, i, _)| o == op && i == a)
        })
        .collect();
    if unread.is_empty() {
        return Ok(());
    }
    let read = ctx.asked_attributes();
    let read = if read.is_empty() {
        "none".to_string()
    } else {
        read.join(", ")
    };
    Err(ctx.err(format!(
        "attribute(s) {} are not supported by Ember's importer (the attributes it reads here: \
         {read})",
        unread.join(", ")
    )))
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
                        .any(|op| op.name == *source || op.file == *source),
                    "{kind}: {source} is neither an op nor an importer file of OPS"
                );
            }
        }
    }

    /// The table is sorted by name, without repeats, and every range is well formed.
    #[test]
    fn op_table_is_sorted_and_its_ranges_are_well_formed() {
        for pair in OPS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} and {} are out of order",
                pair[0].name,
                pair[1].name
            );
        }
        for op in OPS {
            assert!(op.opsets.since >= MIN_OPSET, "{}: {}", op.name, op.opsets);
            assert!(
                op.opsets.until.is_none_or(|u| u >= op.opsets.since),
                "{}: {}",
                op.name,
                op.opsets
            );
            for arity in [op.inputs, op.outputs] {
                assert!(arity.max.is_none_or(|m| m >= arity.min), "{}", op.name);
            }
            assert!(op.outputs.min >= 1, "{}: a node needs an output", op.name);
        }
    }

    /// The ignored attributes are of ops in the table, sorted, each once.
    #[test]
    fn ignored_attributes_are_of_known_ops() {
        for pair in IGNORED_ATTRIBUTES.windows(2) {
            assert!(
                (pair[0].0, pair[0].1) < (pair[1].0, pair[1].1),
                "{pair:?} out of order"
            );
        }
        for (op, attribute, _) in IGNORED_ATTRIBUTES {
            assert!(
                OPS.iter().any(|o| o.name == *op),
                "{op}.{attribute}: no such op"
            );
        }
    }

    #[test]
    fn ranges_read_as_text() {
        let open = Opsets {
            since: 10,
            until: None,
        };
        let closed = Opsets {
            since: 7,
            until: Some(9),
        };
        assert_eq!(open.to_string(), "10 and later");
        assert_eq!(closed.to_string(), "7 to 9");
        assert!(open.contains(23) && !open.contains(9));
        assert!(closed.contains(9) && !closed.contains(10) && !closed.contains(6));
        let one = Arity {
            min: 1,
            max: Some(1),
        };
        let some = Arity {
            min: 1,
            max: Some(3),
        };
        let any = Arity { min: 1, max: None };
        assert_eq!(
            [one.to_string(), some.to_string(), any.to_string()],
            ["1", "1 to 3", "1 or more"]
        );
        assert!(any.contains(40) && !any.contains(0) && !some.contains(4));
    }
}
