//! The IR's op enum and its shape inference. Parameters are resolved (no defaults, no negative axes),
//! and are expressed against the stored dims of the tensors: a spatial op carries the layout it reads.
//!
//! The parameters and shape inference of an op family live in a file of their own below this one
//! ([`nn`]: convolution and fully connected; [`pool`]: pooling windows), which the int8 ops of
//! [`super::quant`] share; the other families are still matched here.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::compare::CompareOp;
use ember_core::ops::math::logical::LogicalOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::reduce::ReduceOp;

pub mod nn;
pub mod pool;

use super::DType;

use super::conv_transpose::{self, ConvTranspose2d};
use super::quant::QuantOp;
use super::shape::{broadcast, numel, permute};
use super::slicing::{self, Resize, Slice};
use nn::{infer_conv, infer_fully_connected};
pub use nn::{Conv2d, SpatialLayout};
use pool::infer_pool;
pub use pool::Pool2d;

/// What a node computes.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Inputs `x, w[, b]`.
    Conv2d(Conv2d),
    /// Inputs `x, w[, b]`; see [`conv_transpose`].
    ConvTranspose2d(ConvTranspose2d),
    /// `y = act(x W^T + b)`; inputs `x [..., IN], w [OUT, IN][, b [OUT]]`.
    FullyConnected {
        /// Fused activation.
        act: Activation,
    },
    /// Batched matrix multiply of two operands of rank >= 2.
    MatMul,
    /// Broadcasting element-wise binary op.
    Binary {
        /// The function.
        op: BinaryOp,
        /// Fused activation.
        act: Activation,
    },
    /// Element-wise unary op.
    Unary(UnaryOp),
    /// Softmax along one axis.
    Softmax {
        /// The axis.
        axis: usize,
    },
    /// Max pooling.
    MaxPool(Pool2d),
    /// Average pooling.
    AvgPool(Pool2d),
    /// Mean over the spatial dims.
    GlobalAvgPool {
        /// Layout of input and output.
        layout: SpatialLayout,
    },
    /// Concatenation along one axis.
    Concat {
        /// The axis.
        axis: usize,
    },
    /// Permutation of dims.
    Transpose {
        /// Output dim `i` is input dim `perm[i]`.
        perm: Vec<usize>,
    },
    /// Constant padding.
    Pad {
        /// Elements added before each axis.
        before: Vec<usize>,
        /// Elements added after each axis.
        after: Vec<usize>,
        /// Fill value.
        value: f32,
    },
    /// Same elements, new dims (also Flatten, Identity, and transposes of size-1 dims).
    Reshape {
        /// Output dims.
        shape: Vec<usize>,
    },
    /// LogSoftmax along one axis.
    LogSoftmax {
        /// The axis.
        axis: usize,
    },
    /// Reduction over a set of axes (also GlobalMaxPool: Max over the spatial axes, dims kept).
    Reduce {
        /// The function.
        op: ReduceOp,
        /// The reduced axes, sorted and distinct.
        axes: Vec<usize>,
        /// Reduced axes stay as dims of 1.
        keepdims: bool,
    },
    /// Inference BatchNormalization over axis 1; inputs `x, scale, bias, mean, var` (constants `[C]`).
    /// Never lowered: the `fold_batch_norm` pass folds it into its producer or rewrites it.
    BatchNorm {
        /// Added to the variance.
        epsilon: f32,
    },
    /// Strided slice (ONNX Slice, and each output of Split).
    Slice(Slice),
    /// Gather along `axis`; inputs `x, indices` (an f32 constant of whole numbers inside the axis).
    Gather {
        /// The axis.
        axis: usize,
    },
    /// Copy of the input repeated along its size-1 axes to `shape` (Expand, Tile).
    Broadcast {
        /// Output dims.
        shape: Vec<usize>,
    },
    /// Resize of the last two axes.
    Resize(Resize),
    /// Broadcasting comparison of two tensors of one dtype; output Bool.
    Compare(CompareOp),
    /// Broadcasting And / Or / Xor of two Bool tensors.
    Logical(LogicalOp),
    /// Boolean negation.
    Not,
    /// `cond ? a : b` with broadcasting; inputs `cond` (Bool), `a`, `b`.
    Where,
    /// Element-wise conversion to `to`.
    Cast {
        /// The output dtype.
        to: DType,
    },
    /// ArgMax (`max`) or ArgMin along `axis`; output I64.
    ArgReduce {
        /// ArgMax if true.
        max: bool,
        /// The axis.
        axis: usize,
        /// Keep the axis as a dim of 1.
        keepdims: bool,
        /// Ties pick the last index.
        select_last_index: bool,
    },
    /// An int8 op of the TFLite int8 spec, or a Quantize/Dequantize/Requantize at an int8 edge; see
    /// [`super::quant`].
    Quant(QuantOp),
    /// `y = act(scales[o] * (x . w[o]) + b[o])`, weight-only int8 (`--quantize int8-weights`); inputs
    /// `x [..., IN]`, `w` (I8 `[OUT, IN]`), `scales` (F32 `[OUT]`)`[, b [OUT]]`.
    FullyConnectedW8 {
        /// Fused activation.
        act: Activation,
    },
    /// Rows of a constant table picked by ids computed at run time (ONNX Gather on axis 0 with
    /// run-time indices, PyTorch `nn.Embedding`); inputs `table [ROWS, ...]` (F32, or I8 with
    /// `scales`), `ids` (I32 or I64)`[, scales]` (F32 `[ROWS]`); output F32 `ids ++ table[1..]`.
    Embedding,
    /// An op carried as the blob's own kind, from its importer to the blob: its parameters are the
    /// blob's, its output's dims and dtype are the runtime's inference (`ember_core::model::infer_dims`
    /// and `infer_dtype`, beside the op's kernel) and its checks the runtime's validation, and it
    /// lowers as it is. For the ops no pass rewrites (no fusion, no layout, no quantization): such an
    /// op needs no variant, inference or lowering of its own here (LayerNorm is one).
    Core(ember_core::OpKind),
}

impl Op {
    /// Short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Conv2d(_) => "Conv2d",
            Op::ConvTranspose2d(_) => "ConvTranspose2d",
            Op::FullyConnected { .. } => "FullyConnected",
            Op::MatMul => "MatMul",
            Op::Binary { .. } => "Binary",
            Op::Unary(_) => "Unary",
            Op::Softmax { .. } => "Softmax",
            Op::MaxPool(_) => "MaxPool2d",
            Op::AvgPool(_) => "AvgPool2d",
            Op::GlobalAvgPool { .. } => "GlobalAvgPool",
            Op::Concat { .. } => "Concat",
            Op::Transpose { .. } => "Transpose",
            Op::Pad { .. } => "Pad",
            Op::Reshape { .. } => "Reshape",
            Op::LogSoftmax { .. } => "LogSoftmax",
            Op::Reduce { .. } => "Reduce",
            Op::BatchNorm { .. } => "BatchNorm",
            Op::Slice(_) => "Slice",
            Op::Gather { .. } => "Gather",
            Op::Broadcast { .. } => "Broadcast",
            Op::Resize(_) => "Resize",
            Op::Compare(c) => c.name(),
            Op::Logical(l) => l.name(),
            Op::Not => "Not",
            Op::Where => "Where",
            Op::Cast { .. } => "Cast",
            Op::ArgReduce { max: true, .. } => "ArgMax",
            Op::ArgReduce { .. } => "ArgMin",
            Op::Quant(q) => q.name(),
            Op::FullyConnectedW8 { .. } => "FullyConnectedW8",
            Op::Embedding => "Embedding",
            Op::Core(kind) => kind.name(),
        }
    }

    /// The output dtype for these input dtypes, or why the op does not take them.
    pub fn infer_dtype(&self, x: &[DType]) -> Result<DType, String> {
        let first = x.first().copied().unwrap_or(DType::F32);
        let all_same = x.iter().all(|&t| t == first);
        let named = |t: DType| t.name();
        match self {
            Op::Compare(_) => {
                if !all_same {
                    return Err(format!(
                        "compares {} with {}; both inputs must have one type",
                        named(x[0]),
                        named(x[1])
                    ));
                }
                Ok(DType::Bool)
            }
            Op::Logical(_) | Op::Not => {
                if x.iter().any(|&t| t != DType::Bool) {
                    return Err("logical ops take bool tensors".into());
                }
                Ok(DType::Bool)
            }
            Op::Where => {
                if x.len() != 3 || x[0] != DType::Bool {
                    return Err("the condition must be bool".into());
                }
                if x[1] != x[2] {
                    return Err(format!(
                        "the branches are {} and {}; they must have one type",
                        named(x[1]),
                        named(x[2])
                    ));
                }
                Ok(x[1])
            }
            Op::Cast { to } => Ok(*to),
            Op::Core(kind) => {
                ember_core::model::infer_dtype(kind, x).map_err(|reason| reason.to_string())
            }
            Op::FullyConnectedW8 { .. } => {
                let want = [DType::F32, DType::I8, DType::F32, DType::F32];
                if x.iter().zip(want).any(|(&t, w)| t != w) {
                    return Err(
                        "weight-only int8 takes f32 inputs, int8 weights and f32 scales".into(),
                    );
                }
                Ok(DType::F32)
            }
            Op::Embedding => {
                let table_ok = matches!(
                    (x.first(), x.get(2)),
                    (Some(DType::F32), None) | (Some(DType::I8), Some(DType::F32))
                );
                if !table_ok {
                    return Err("an embedding table is FLOAT (or int8 with f32 scales)".into());
                }
                if !matches!(x.get(1), Some(DType::I32 | DType::I64)) {
                    return Err(format!(
                        "embedding ids are {}; they must be INT32 or INT64",
                        x.get(1).map_or("missing", |t| t.name())
                    ));
                }
                Ok(DType::F32)
            }
            Op::Quant(q) => q.infer_dtype(x),
            Op::ArgReduce { .. } => {
                if first == DType::Bool {
                    return Err(format!(
                        "ArgMax/ArgMin of {} is not supported",
                        named(first)
                    ));
                }
                Ok(DType::I64)
            }
            Op::Concat { .. }
            | Op::Transpose { .. }
            | Op::Pad { .. }
            | Op::Reshape { .. }
            | Op::Slice(_)
            | Op::Broadcast { .. } => {
                if !all_same {
                    return Err("inputs of different types".into());
                }
                Ok(first)
            }
            Op::Gather { .. } => {
                if x.get(1).is_some_and(|&t| t != DType::F32) {
                    return Err("gather indices must be a constant".into());
                }

                Ok(first)
            }
            Op::Binary { op, act } if first != DType::F32 || !all_same => {
                let int_ok = !matches!(first, DType::F16 | DType::Bool)
                    && *act == Activation::None
                    && *op != BinaryOp::PRelu;
                if !all_same {
                    return Err(format!(
                        "inputs are {} and {}; they must have one type",
                        named(x[0]),
                        named(x[1])
                    ));
                }
                if !int_ok {
                    return Err(format!(
                        "this op is not supported on {} tensors",
                        named(first)
                    ));
                }
                Ok(first)
            }
            Op::Unary(u) if first != DType::F32 => {
                let ok = match u {
                    UnaryOp::Abs
                    | UnaryOp::Neg
                    | UnaryOp::Sign
                    | UnaryOp::Relu
                    | UnaryOp::Clip { .. } => true,
                    UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => first != DType::F64,
                    _ => false,
                };
                if !ok || matches!(first, DType::F16 | DType::Bool) {
                    return Err(format!(
                        "{u:?} is not supported on {} tensors (FLOAT only)",
                        named(first)
                    ));
                }
                Ok(first)
            }
            _ => match x.iter().find(|&&t| t != DType::F32) {
                Some(&t) => Err(format!(
                    "an input is {}; this op computes in FLOAT only",
                    named(t)
                )),
                None => Ok(DType::F32),
            },
        }
    }

    /// The fused activation, for ops that have one.
    pub fn activation_mut(&mut self) -> Option<&mut Activation> {
        match self {
            Op::Conv2d(c) => Some(&mut c.act),
            Op::ConvTranspose2d(c) => Some(&mut c.act),
            Op::FullyConnected { act } | Op::FullyConnectedW8 { act } | Op::Binary { act, .. } => {
                Some(act)
            }
            _ => None,
        }
    }

    /// The output dims for these input dims, or why they do not fit the op.
    pub fn infer(&self, x: &[&[usize]]) -> Result<Vec<usize>, String> {
        let arity = |lo: usize, hi: usize| super::shape::arity(x.len(), lo, hi);
        match self {
            Op::Conv2d(c) => {
                arity(2, 3)?;
                infer_conv(c, x[0], x[1], x.get(2).copied())
            }
            Op::ConvTranspose2d(c) => {
                arity(2, 3)?;
                conv_transpose::infer(c, x[0], x[1], x.get(2).copied())
            }
            Op::FullyConnected { .. } => {
                arity(2, 3)?;
                infer_fully_connected(x[0], x[1], x.get(2).copied())
            }
            Op::MatMul => {
                arity(2, 2)?;
                let (a, b) = (x[0], x[1]);
                if a.len() < 2 || b.len() < 2 {
                    return Err(format!("operands {a:?} and {b:?} must have rank >= 2"));
                }
                let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
                let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
                if k != k2 {
                    return Err(format!("inner dims of {a:?} and {b:?} differ"));
                }
                let mut y = broadcast(&a[..a.len() - 2], &b[..b.len() - 2])?;
                y.extend([m, n]);
                Ok(y)
            }
            Op::Binary { .. } => {
                arity(2, 2)?;
                broadcast(x[0], x[1])
            }
            Op::Unary(_) => {
                arity(1, 1)?;
                Ok(x[0].to_vec())
            }
            Op::Softmax { axis } => {
                arity(1, 1)?;
                if *axis >= x[0].len() {
                    return Err(format!("axis {axis} is out of range for {:?}", x[0]));
                }
                Ok(x[0].to_vec())
            }
            Op::MaxPool(p) | Op::AvgPool(p) => {
                arity(1, 1)?;
                infer_pool(p, x[0])
            }
            Op::GlobalAvgPool { layout } => {
                arity(1, 1)?;
                match (x[0], layout) {
                    ([n, c, _, _], SpatialLayout::Nchw) => Ok(vec![*n, *c, 1, 1]),
                    ([n, _, _, c], SpatialLayout::Nhwc) => Ok(vec![*n, 1, 1, *c]),
                    (s, _) => Err(format!("input {s:?} must have rank 4")),
                }
            }
            Op::Concat { axis } => {
                arity(1, usize::MAX)?;
                let first = x[0];
                if *axis >= first.len() {
                    return Err(format!("axis {axis} is out of range for {first:?}"));
                }
                let mut y = first.to_vec();
                y[*axis] = 0;
                for s in x {
                    let same_rank = s.len() == first.len();
                    if !same_rank || (0..s.len()).any(|i| i != *axis && s[i] != first[i]) {
                        return Err(format!(
                            "input {s:?} does not match {first:?} outside axis {axis}"
                        ));
                    }
                    y[*axis] = y[*axis].checked_add(s[*axis]).ok_or("size overflows")?;
                }
                Ok(y)
            }
            Op::Transpose { perm } => {
                arity(1, 1)?;
                permute(x[0], perm)
            }
            Op::Pad { before, after, .. } => {
                arity(1, 1)?;
                let s = x[0];
                if before.len() != s.len() || after.len() != s.len() {
                    return Err(format!("pads do not match rank {}", s.len()));
                }
                (0..s.len())
                    .map(|i| {
                        s[i].checked_add(before[i])
                            .and_then(|v| v.checked_add(after[i]))
                            .ok_or_else(|| "padded size overflows".to_string())
                    })
                    .collect()
            }
            Op::Reshape { shape } => {
                arity(1, 1)?;
                if numel(x[0])? != numel(shape)? {
                    return Err(format!(
                        "cannot reshape {:?} to {shape:?}: element counts differ",
                        x[0]
                    ));
                }
                Ok(shape.clone())
            }
            Op::LogSoftmax { axis } => {
                arity(1, 1)?;
                if *axis >= x[0].len() {
                    return Err(format!("axis {axis} is out of range for {:?}", x[0]));
                }
                Ok(x[0].to_vec())
            }
            Op::Reduce { axes, keepdims, .. } => {
                arity(1, 1)?;
                infer_reduce(x[0], axes, *keepdims)
            }
            Op::Core(kind) => {
                let (min, max) = kind.arity();
                arity(min, max)?;
                let dims = ember_core::model::infer_dims(kind, x).map_err(|r| r.to_string())?;
                Ok(dims.to_vec())
            }
            Op::BatchNorm { .. } => {
                arity(5, 5)?;
                infer_batch_norm(x)
            }
            Op::Slice(sl) => {
                arity(1, 1)?;
                slicing::infer_slice(sl, x[0])
            }
            Op::Gather { axis } => {
                arity(2, 2)?;
                slicing::infer_gather(*axis, x[0], x[1])
            }
            Op::Broadcast { shape } => {
                arity(1, 1)?;
                slicing::infer_broadcast(x[0], shape)
            }
            Op::Resize(r) => {
                arity(1, 1)?;
                slicing::infer_resize(r, x[0])
            }
            Op::Compare(_) | Op::Logical(_) => {
                arity(2, 2)?;
                broadcast(x[0], x[1])
            }
            Op::Not | Op::Cast { .. } => {
                arity(1, 1)?;
                Ok(x[0].to_vec())
            }
            Op::Where => {
                arity(3, 3)?;
                broadcast(x[0], &broadcast(x[1], x[2])?)
            }
            Op::Quant(q) => q.infer(x),
            Op::FullyConnectedW8 { .. } => {
                arity(3, 4)?;
                let y = infer_fully_connected(x[0], x[1], x.get(3).copied())?;
                if *x[2] != [x[1][0]] {
                    return Err(format!("scales {:?} must be [{}]", x[2], x[1][0]));
                }
                Ok(y)
            }
            Op::Embedding => {
                arity(2, 3)?;
                let (table, ids) = (x[0], x[1]);
                let Some((&rows, row)) = table.split_first() else {
                    return Err("the table must have rank >= 1".into());
                };
                if rows == 0 {
                    return Err("the table has no rows".into());
                }
                if let Some(s) = x.get(2) {
                    if **s != [rows] {
                        return Err(format!("scales {s:?} must be [{rows}]"));
                    }
                }
                Ok(ids.iter().chain(row).copied().collect())
            }
            Op::ArgReduce { axis, keepdims, .. } => {
                arity(1, 1)?;
                let (axis, keepdims) = (*axis, *keepdims);
                match x[0].get(axis) {
                    None => Err(format!("axis {axis} is out of range for {:?}", x[0])),
                    Some(0) => Err(format!("axis {axis} of {:?} is empty", x[0])),
                    Some(_) => {
                        let mut y = x[0].to_vec();
                        if keepdims {
                            y[axis] = 1;
                        } else {
                            y.remove(axis);
                        }
                        Ok(y)
                    }
                }
            }
        }
    }
}

/// Runs the runtime's validation of an [`Op::Core`] node (`ember_core::model::validate_op`, what
/// `Model::parse` runs) on the dims and dtypes of its inputs and output; other ops pass (theirs runs
/// when they are lowered). The values of weights are not known here: the lowering's check reads them.
pub fn validate_core(
    op: &Op,
    x: &[&[usize]],
    dtypes: &[DType],
    y: &[usize],
    y_dtype: DType,
) -> Result<(), String> {
    let Op::Core(kind) = op else {
        return Ok(());
    };
    let operands = ShapeOperands {
        x,
        dtypes,
        y,
        y_dtype,
    };
    ember_core::model::validate_op(kind, &operands).map_err(str::to_string)
}

/// An op's tensors as dims and dtypes, without values.
struct ShapeOperands<'a> {
    x: &'a [&'a [usize]],
    dtypes: &'a [DType],
    y: &'a [usize],
    y_dtype: DType,
}

impl ember_core::ops::entry::Operands for ShapeOperands<'_> {
    fn count(&self) -> usize {
        self.x.len()
    }

    fn dims(&self, k: usize) -> &[usize] {
        self.x.get(k).copied().unwrap_or(&[])
    }

    fn dtype(&self, k: usize) -> DType {
        self.dtypes.get(k).copied().unwrap_or(DType::F32)
    }

    fn out_dims(&self) -> &[usize] {
        self.y
    }

    fn out_dtype(&self) -> DType {
        self.y_dtype
    }

    fn all_f32(&self) -> bool {
        self.y_dtype == DType::F32 && self.dtypes.iter().all(|&t| t == DType::F32)
    }

    fn weight(&self, _k: usize) -> Result<&[u8], ember_core::ops::entry::NotAWeight> {
        Err(ember_core::ops::entry::NotAWeight::InArena)
    }
}

fn infer_reduce(x: &[usize], axes: &[usize], keepdims: bool) -> Result<Vec<usize>, String> {
    if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= x.len()) {
        return Err(format!(
            "axes {axes:?} must be sorted, distinct and below the rank of {x:?}"
        ));
    }
    Ok(x.iter()
        .enumerate()
        .filter_map(|(d, &n)| match axes.contains(&d) {
            true if keepdims => Some(1),
            true => None,
            false => Some(n),
        })
        .collect())
}

fn infer_batch_norm(x: &[&[usize]]) -> Result<Vec<usize>, String> {
    let xs = x[0];
    let c = *xs
        .get(1)
        .ok_or_else(|| format!("input {xs:?} must have rank >= 2"))?;
    for (what, s) in ["scale", "bias", "mean", "var"].iter().zip(&x[1..]) {
        if *s != [c] {
            return Err(format!("{what} {s:?} must be [{c}]"));
        }
    }
    Ok(xs.to_vec())
}
