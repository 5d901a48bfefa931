//! The IR's op enum and its shape inference. Parameters are resolved (no defaults, no negative axes),
//! and are expressed against the stored dims of the tensors: a spatial op carries the layout it reads.
//!
//! The parameters and the shape and dtype inference of an op family live in a file of their own below
//! this one, and this file only dispatches to them: [`math`] (element-wise ops, comparisons, `Where`,
//! `Cast`, `MatMul`), [`array`](mod@array) (ops that move elements: concat, transpose, pad, reshape,
//! slice, gather, broadcast, resize, embedding), [`nn`] (convolutions, fully connected, softmax,
//! reductions, normalizations) and [`pool`] (pooling windows); [`nn`] and [`pool`] are shared with the
//! int8 ops of [`super::quant`]. [`core_op`] is [`Op::Core`]'s: the runtime's own inference and
//! validation of an op carried as its blob kind.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::compare::CompareOp;
use ember_core::ops::math::logical::LogicalOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::reduce::ReduceOp;

pub mod array;
pub mod core_op;
pub mod math;
pub mod nn;
pub mod pool;

use super::DType;

use super::quant::QuantOp;
use super::shape::{broadcast, permute};
pub use array::{Resize, Slice};
pub use nn::{Conv2d, ConvTranspose2d, SpatialLayout};
pub use pool::Pool2d;

/// What a node computes.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Inputs `x, w[, b]`.
    Conv2d(Conv2d),
    /// Inputs `x, w[, b]`; see [`nn`].
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
    /// blob's, its output's dims and dtype are the runtime's inference and its checks the runtime's
    /// validation ([`core_op`]), and it lowers as it is. For the ops no pass rewrites (no fusion,
    /// no layout, no quantization): such an op needs no variant, inference or lowering of its own here
    /// (LayerNorm and RMSNorm are such ops).
    Core(ember_core::OpKind),
    /// A loop or a branch with its sub-graphs ([`super::control`]): inputs as
    /// [`Control`](super::control::Control) says; output its token (a loop's counter, I64, or an
    /// `If`'s taken branch, Bool, both scalars), which the node's values ([`Op::ControlOutput`]) read.
    Control(std::sync::Arc<super::control::Control>),
    /// Value `index` of the control node whose token is the input (its dims and dtype).
    ControlOutput {
        /// Which value of the ONNX node.
        index: usize,
        /// Its dims.
        shape: Vec<usize>,
        /// Its dtype.
        dtype: DType,
    },
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
            Op::Control(c) => match **c {
                super::control::Control::Loop(_) => "Loop",
                super::control::Control::If(_) => "If",
            },
            Op::ControlOutput { .. } => "ControlOutput",
        }
    }

    /// The output dtype for these input dtypes, or why the op does not take them.
    pub fn infer_dtype(&self, x: &[DType]) -> Result<DType, String> {
        match self {
            Op::Binary { op, act } => math::infer_binary_dtype(*op, *act, x),
            Op::Unary(u) => math::infer_unary_dtype(u, x),
            Op::Compare(_) => math::infer_compare_dtype(x),
            Op::Logical(_) | Op::Not => math::infer_logical_dtype(x),
            Op::Where => math::infer_where_dtype(x),
            Op::Cast { to } => Ok(*to),
            Op::Core(kind) => core_op::infer_dtype(kind, x),
            Op::Control(c) => Ok(c.token_dtype()),
            Op::ControlOutput { dtype, .. } => Ok(*dtype),
            Op::Concat { .. }
            | Op::Transpose { .. }
            | Op::Pad { .. }
            | Op::Reshape { .. }
            | Op::Slice(_)
            | Op::Broadcast { .. } => array::infer_moved_dtype(x),
            Op::Gather { .. } => array::infer_gather_dtype(x),
            Op::Embedding => array::infer_embedding_dtype(x),
            Op::FullyConnectedW8 { .. } => nn::infer_fully_connected_w8_dtype(x),
            Op::ArgReduce { .. } => nn::infer_arg_reduce_dtype(x),
            Op::Quant(q) => q.infer_dtype(x),
            _ => float_only(x),
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
        // The input of a one-input op, and the two of a two-input op.
        let one = || arity(1, 1).map(|()| x[0]);
        let two = || arity(2, 2).map(|()| (x[0], x[1]));
        match self {
            Op::Conv2d(c) => {
                arity(2, 3)?;
                nn::infer_conv(c, x[0], x[1], x.get(2).copied())
            }
            Op::ConvTranspose2d(c) => {
                arity(2, 3)?;
                nn::infer_conv_transpose(c, x[0], x[1], x.get(2).copied())
            }
            Op::FullyConnected { .. } => {
                arity(2, 3)?;
                nn::infer_fully_connected(x[0], x[1], x.get(2).copied())
            }
            Op::FullyConnectedW8 { .. } => {
                arity(3, 4)?;
                nn::infer_fully_connected_w8(x[0], x[1], x[2], x.get(3).copied())
            }
            Op::MatMul => two().and_then(|(a, b)| math::infer_matmul(a, b)),
            Op::Binary { .. } | Op::Compare(_) | Op::Logical(_) => {
                two().and_then(|(a, b)| broadcast(a, b))
            }
            Op::Unary(_) | Op::Not | Op::Cast { .. } => Ok(one()?.to_vec()),
            Op::Where => {
                arity(3, 3)?;
                math::infer_where(x[0], x[1], x[2])
            }
            Op::Softmax { axis } | Op::LogSoftmax { axis } => nn::infer_along_axis(one()?, *axis),
            Op::Reduce { axes, keepdims, .. } => nn::infer_reduce(one()?, axes, *keepdims),
            Op::ArgReduce { axis, keepdims, .. } => nn::infer_arg_reduce(one()?, *axis, *keepdims),
            Op::Core(kind) => core_op::infer(kind, x),
            Op::Control(_) => Ok(Vec::new()),
            Op::ControlOutput { shape, .. } => Ok(shape.clone()),
            Op::BatchNorm { .. } => {
                arity(5, 5)?;
                nn::infer_batch_norm(x)
            }
            Op::MaxPool(p) | Op::AvgPool(p) => pool::infer_pool(p, one()?),
            Op::GlobalAvgPool { layout } => pool::infer_global_pool(*layout, one()?),
            Op::Concat { axis } => {
                arity(1, usize::MAX)?;
                array::infer_concat(x, *axis)
            }
            Op::Transpose { perm } => permute(one()?, perm),
            Op::Pad { before, after, .. } => array::infer_pad(one()?, before, after),
            Op::Reshape { shape } => array::infer_reshape(one()?, shape),
            Op::Slice(sl) => array::infer_slice(sl, one()?),
            Op::Gather { axis } => {
                two().and_then(|(data, ids)| array::infer_gather(*axis, data, ids))
            }
            Op::Broadcast { shape } => array::infer_broadcast(one()?, shape),
            Op::Resize(r) => array::infer_resize(r, one()?),
            Op::Embedding => {
                arity(2, 3)?;
                array::infer_embedding(x[0], x[1], x.get(2).copied())
            }
            Op::Quant(q) => q.infer(x),
        }
    }
}

/// The output dtype of an op that computes in FLOAT only, or the first input that is not FLOAT.
pub(crate) fn float_only(x: &[DType]) -> Result<DType, String> {
    match x.iter().find(|&&t| t != DType::F32) {
        Some(&t) => Err(format!(
            "an input is {}; this op computes in FLOAT only",
            t.name()
        )),
        None => Ok(DType::F32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_checks_its_input_count() {
        let add = Op::Binary {
            op: BinaryOp::Add,
            act: Activation::None,
        };
        let err = add.infer(&[&[2]]).unwrap_err();
        assert!(err.contains("2 to 2") && err.contains("got 1"), "{err}");
        assert!(Op::Unary(UnaryOp::Relu).infer(&[&[2], &[2]]).is_err());
        assert!(Op::BatchNorm { epsilon: 1e-5 }
            .infer(&[&[1, 2][..]; 4])
            .is_err());
        assert!(Op::Embedding.infer(&[&[4, 2]]).is_err());
        assert!(Op::FullyConnectedW8 {
            act: Activation::None
        }
        .infer(&[&[1, 2], &[3, 2]])
        .is_err());
    }

    #[test]
    fn float_only_ops_name_the_other_type() {
        assert_eq!(
            Op::MatMul.infer_dtype(&[DType::F32, DType::F32]),
            Ok(DType::F32)
        );
        let err = Op::MatMul
            .infer_dtype(&[DType::F32, DType::I64])
            .unwrap_err();
        assert!(err.contains("FLOAT only"), "{err}");
        assert_eq!(
            Op::Cast { to: DType::I32 }.infer_dtype(&[DType::F32]),
            Ok(DType::I32)
        );
    }
}
