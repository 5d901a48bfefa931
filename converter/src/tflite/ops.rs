//! The TFLite operators Ember imports, each lowered to the IR ops the ONNX importer uses (channels
//! last, as TFLite stores them):
//!
//! | TFLite | IR | notes |
//! | --- | --- | --- |
//! | CONV_2D | Conv2d (OHWI, groups from the weights) | SAME/VALID padding, dilation |
//! | DEPTHWISE_CONV_2D | Conv2d with one group per input channel | weights `[1, H, W, C*M]` permuted to `[C*M, H, W, 1]` at conversion |
//! | TRANSPOSE_CONV | ConvTranspose2d | output shape from its constant input; optional bias |
//! | FULLY_CONNECTED | FullyConnected | input flattened to `[-1, IN]` unless `keep_num_dims` |
//! | AVERAGE_POOL_2D, MAX_POOL_2D | AvgPool (padding not counted), MaxPool | |
//! | ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, PRELU | Binary | numpy broadcasting |
//! | RELU, RELU6, RELU_N1_TO_1, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, ELU, GELU, EXP, LOG, SQRT, RSQRT, ABS, NEG | Unary | |
//! | RESHAPE, SQUEEZE, EXPAND_DIMS | Reshape | `-1` resolved |
//! | SOFTMAX, LOG_SOFTMAX | Softmax, LogSoftmax (last axis) | `beta` scales the input |
//! | PAD, PADV2 | Pad | constant paddings |
//! | CONCATENATION, PACK | Concat | |
//! | SPLIT, SPLIT_V, UNPACK, SLICE, STRIDED_SLICE | Slice (one per output) | masks, negative strides, `shrink_axis_mask` |
//! | MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD | Reduce | constant axes |
//! | QUANTIZE, DEQUANTIZE | Quantize, Dequantize, Requantize | FLOAT16 constants widened at conversion |
//! | RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR | Resize (channels last) | `align_corners`, `half_pixel_centers` |
//! | TRANSPOSE | Transpose | |
//! | GATHER | Gather (constant indices) or Embedding | |
//! | BATCH_MATMUL | MatMul | `adj_x`/`adj_y` as transposes |
//! | CAST, ARG_MAX, ARG_MIN | Cast, ArgReduce | |
//! | EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, LOGICAL_AND/OR/NOT, SELECT, SELECT_V2 | Compare, Logical, Not, Where | bool tensors |
//! | SIN, COS, FLOOR, CEIL, ROUND, SQUARE, POW, FLOOR_MOD, BROADCAST_TO | Unary, Binary, Broadcast | |
//! | SHAPE | a constant | shapes are static |
//! | UNIDIRECTIONAL_SEQUENCE_LSTM | the recurrent kernel (Rnn, LSTM cell) | float weights; no peepholes, projection, layer norm or clipping; the state starts at zero on every run |
//!
//! Fused activations (NONE, RELU, RELU_N1_TO_1, RELU6, TANH) become the op's own clamp where the IR
//! op has one, a Unary after it otherwise.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::compare::CompareOp;
use ember_core::ops::math::logical::LogicalOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::reduce::ReduceOp;
use ember_core::ops::nn::rnn::{RnnCell, RnnDirection, RnnParams};
use ember_core::schema::array::{CoordMode, NearestMode, ResizeMode, ResizeParams};
use ember_core::OpKind;

use super::schema::{
    ActivationFunctionType, BuiltinOperator as B, BuiltinOptionsRef as O, OperatorRef, Padding,
    TensorType,
};
use super::{int8, Importer, OpCode, OpError};
use crate::ir::op::{Conv2d, ConvTranspose2d, Resize, Slice};
use crate::ir::quant::{Quant, QuantOp};
use crate::ir::shape::resolve_axis;
use crate::ir::{ConstData, DType, Op, Pool2d, SpatialLayout, TensorId};

type R<T> = Result<T, OpError>;

/// One operator being imported: its file tensors and the importer.
struct Ctx<'i, 'a> {
    imp: &'i mut Importer<'a>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
    /// The node's name: its first output tensor's.
    name: String,
    /// TFLite's op name, for the IR node's source.
    source: String,
}

/// Imports operator `index` of subgraph 0.
pub(crate) fn import(imp: &mut Importer<'_>, code: &OpCode, op: &OperatorRef<'_>) -> R<()> {
    let inputs: Vec<i32> = op.inputs()?.map(|v| v.iter().collect()).unwrap_or_default();
    let outputs: Vec<i32> = op
        .outputs()?
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let first = outputs
        .first()
        .ok_or_else(|| OpError("the operator has no outputs".into()))?;
    let name = imp.file(*first)?.name.clone();
    let options = op.builtin_options()?;
    let mut c = Ctx {
        imp,
        inputs,
        outputs,
        name,
        source: code.name(),
    };
    match code.builtin {
        B::Conv2d => conv(&mut c, options, false),
        B::DepthwiseConv2d => conv(&mut c, options, true),
        B::TransposeConv => transpose_conv(&mut c, options),
        B::FullyConnected => fully_connected(&mut c, options),
        B::AveragePool2d | B::MaxPool2d => pool(&mut c, options, code.builtin == B::MaxPool2d),
        B::Add | B::Sub | B::Mul | B::Div => {
            let act = match options {
                Some(O::AddOptions(o)) => o.fused_activation_function()?,
                Some(O::SubOptions(o)) => o.fused_activation_function()?,
                Some(O::MulOptions(o)) => o.fused_activation_function()?,
                Some(O::DivOptions(o)) => o.fused_activation_function()?,
                _ => ActivationFunctionType::None,
            };
            let op = match code.builtin {
                B::Add => BinaryOp::Add,
                B::Sub => BinaryOp::Sub,
                B::Mul => BinaryOp::Mul,
                _ => BinaryOp::Div,
            };
            binary(&mut c, op, act)
        }
        B::Maximum => binary(&mut c, BinaryOp::Max, ActivationFunctionType::None),
        B::Minimum => binary(&mut c, BinaryOp::Min, ActivationFunctionType::None),
        B::Prelu => binary(&mut c, BinaryOp::PRelu, ActivationFunctionType::None),
        B::SquaredDifference => {
            let (a, b) = (c.float_in(0)?, c.float_in(1)?);
            let d = c.tmp("difference", binary_op(BinaryOp::Sub), vec![a, b])?;
            let y = c.tmp("squared", binary_op(BinaryOp::Mul), vec![d, d])?;
            c.finish(y)
        }
        B::Relu => unary(&mut c, UnaryOp::Relu),
        B::Relu6 => unary(&mut c, UnaryOp::Relu6),
        B::ReluN1To1 => unary(
            &mut c,
            UnaryOp::Clip {
                min: -1.0,
                max: 1.0,
            },
        ),
        B::Logistic => unary(&mut c, UnaryOp::Sigmoid),
        B::Tanh => unary(&mut c, UnaryOp::Tanh),
        B::HardSwish => match c.int8_io()? {
            Some((x, y)) => table(&mut c, "HardSwish", int8::hard_swish(x, y)),
            None => unary(&mut c, UnaryOp::HardSwish),
        },
        B::Exp => unary(&mut c, UnaryOp::Exp),
        B::Log => unary(&mut c, UnaryOp::Log),
        B::Sqrt => unary(&mut c, UnaryOp::Sqrt),
        B::Abs => unary(&mut c, UnaryOp::Abs),
        B::Neg => unary(&mut c, UnaryOp::Neg),
        B::Elu => unary(&mut c, UnaryOp::Elu { alpha: 1.0 }),
        B::Rsqrt => {
            let x = c.float_in(0)?;
            let s = c.tmp("sqrt", Op::Unary(UnaryOp::Sqrt), vec![x])?;
            let y = c.tmp("rsqrt", Op::Unary(UnaryOp::Reciprocal), vec![s])?;
            c.finish(y)
        }
        B::LeakyRelu => {
            let alpha = match options {
                Some(O::LeakyReluOptions(o)) => o.alpha()?,
                _ => 0.2,
            };
            match c.int8_io()? {
                Some((x, y)) => {
                    let rounding = c.imp.rounding;
                    table(&mut c, "LeakyRelu", int8::leaky_relu(x, y, alpha, rounding))
                }
                None => unary(&mut c, UnaryOp::LeakyRelu { alpha }),
            }
        }
        B::Gelu => {
            let approximate = match options {
                Some(O::GeluOptions(o)) => o.approximate()?,
                _ => false,
            };
            unary(
                &mut c,
                if approximate {
                    UnaryOp::GeluTanh
                } else {
                    UnaryOp::Gelu
                },
            )
        }
        B::Reshape | B::Squeeze | B::ExpandDims => reshape(&mut c, code.builtin, options),
        B::Softmax | B::LogSoftmax => softmax(&mut c, options, code.builtin == B::LogSoftmax),
        B::Pad | B::Padv2 => pad(&mut c),
        B::Concatenation => {
            let (axis, act) = match options {
                Some(O::ConcatenationOptions(o)) => (o.axis()?, o.fused_activation_function()?),
                _ => (0, ActivationFunctionType::None),
            };
            concat(&mut c, axis, act)
        }
        B::Pack => pack(&mut c, options),
        B::Split | B::SplitV | B::Unpack => split(&mut c, code.builtin, options),
        B::Slice => slice(&mut c),
        B::StridedSlice => strided_slice(&mut c, options),
        B::Mean | B::Sum | B::ReduceMax | B::ReduceMin | B::ReduceProd => {
            let op = match code.builtin {
                B::Mean => ReduceOp::Mean,
                B::Sum => ReduceOp::Sum,
                B::ReduceMax => ReduceOp::Max,
                B::ReduceMin => ReduceOp::Min,
                _ => ReduceOp::Prod,
            };
            reduce(&mut c, op, options)
        }
        B::Quantize | B::Dequantize => {
            // The float view of the input (a Dequantize when it is int8, the widened constant when
            // FLOAT16), bound to the output: through a Quantize when the output is int8.
            let x = c.float_in(0)?;
            c.finish(x)
        }
        B::ResizeBilinear | B::ResizeNearestNeighbor => resize(&mut c, options),
        B::Transpose => {
            let x = c.float_in(0)?;
            let perm = c.axes(1, c.rank(x), "perm")?;
            let y = c.node(Op::Transpose { perm }, vec![x])?;
            c.finish(y)
        }
        B::Gather => gather(&mut c, options),
        B::UnidirectionalSequenceLstm => lstm(&mut c, options),
        B::Shape => {
            // Shapes are static: the shape is a constant (its consumers fold with it).
            let x = c.value_in(0)?;
            let dims: Vec<i64> = c.shape(x).iter().map(|&d| d as i64).collect();
            let to = super::ir_dtype(c.out_file(0)?.dtype)?;
            let name = format!("{}.shape", c.name);
            let n = dims.len();
            let y = c
                .imp
                .graph
                .add_constant_of(&name, vec![n], ConstData::I64(dims), to);
            c.finish(y)
        }
        B::Equal | B::NotEqual | B::Less | B::LessEqual | B::Greater | B::GreaterEqual => {
            let (a, b) = (c.float_in(0)?, c.float_in(1)?);
            let op = match code.builtin {
                B::Equal | B::NotEqual => CompareOp::Equal,
                B::Less => CompareOp::Less,
                B::LessEqual => CompareOp::LessOrEqual,
                B::Greater => CompareOp::Greater,
                _ => CompareOp::GreaterOrEqual,
            };
            let mut y = c.node(Op::Compare(op), vec![a, b])?;
            if code.builtin == B::NotEqual {
                y = c.tmp("not", Op::Not, vec![y])?;
            }
            c.finish(y)
        }
        B::LogicalAnd | B::LogicalOr => {
            let (a, b) = (c.value_in(0)?, c.value_in(1)?);
            let op = if code.builtin == B::LogicalAnd {
                LogicalOp::And
            } else {
                LogicalOp::Or
            };
            let y = c.node(Op::Logical(op), vec![a, b])?;
            c.finish(y)
        }
        B::LogicalNot => {
            let x = c.value_in(0)?;
            let y = c.node(Op::Not, vec![x])?;
            c.finish(y)
        }
        B::Select | B::SelectV2 => {
            let cond = c.value_in(0)?;
            let (a, b) = (c.float_in(1)?, c.float_in(2)?);
            let y = c.node(Op::Where, vec![cond, a, b])?;
            c.finish(y)
        }
        B::Sin => unary(&mut c, UnaryOp::Sin),
        B::Cos => unary(&mut c, UnaryOp::Cos),
        B::Floor => unary(&mut c, UnaryOp::Floor),
        B::Ceil => unary(&mut c, UnaryOp::Ceil),
        B::Round => unary(&mut c, UnaryOp::Round),
        B::Square => {
            let x = c.float_in(0)?;
            let y = c.node(binary_op(BinaryOp::Mul), vec![x, x])?;
            c.finish(y)
        }
        B::Pow => binary(&mut c, BinaryOp::Pow, ActivationFunctionType::None),
        B::FloorMod => binary(&mut c, BinaryOp::FloorMod, ActivationFunctionType::None),
        B::BroadcastTo => {
            let x = c.float_in(0)?;
            let shape = c.out_file(0)?.shape.clone();
            let y = c.node(Op::Broadcast { shape }, vec![x])?;
            c.finish(y)
        }
        B::BatchMatmul => batch_matmul(&mut c, options),
        B::Cast => {
            let to = super::ir_dtype(c.out_file(0)?.dtype)?;
            let x = c.value_in(0)?;
            let y = c.node(Op::Cast { to }, vec![x])?;
            c.finish(y)
        }
        B::ArgMax | B::ArgMin => {
            let x = c.float_in(0)?;
            let rank = c.rank(x);
            let axis = c.axes(1, rank, "axis")?;
            let [axis] = axis[..] else {
                return Err(OpError("the axis input must hold one axis".into()));
            };
            let op = Op::ArgReduce {
                max: code.builtin == B::ArgMax,
                axis,
                keepdims: false,
                select_last_index: false,
            };
            let y = c.node(op, vec![x])?;
            let to = super::ir_dtype(c.out_file(0)?.dtype)?;
            let y = if to == DType::I64 {
                y
            } else {
                c.tmp("cast", Op::Cast { to }, vec![y])?
            };
            c.finish(y)
        }
        _ => Err(OpError(format!(
            "{} is not supported by Ember's TFLite import; supported: {}",
            code.name(),
            SUPPORTED
        ))),
    }
}

/// The builtin ops of [`import`], for the error message.
const SUPPORTED: &str =
    "ABS, ADD, ARG_MAX, ARG_MIN, AVERAGE_POOL_2D, BATCH_MATMUL, BROADCAST_TO, CAST, CEIL, \
CONCATENATION, CONV_2D, COS, DEPTHWISE_CONV_2D, DEQUANTIZE, DIV, ELU, EQUAL, EXP, EXPAND_DIMS, \
FLOOR, FLOOR_MOD, FULLY_CONNECTED, GATHER, GELU, GREATER, GREATER_EQUAL, HARD_SWISH, \
LEAKY_RELU, LESS, LESS_EQUAL, LOG, LOG_SOFTMAX, LOGICAL_AND, LOGICAL_NOT, LOGICAL_OR, \
LOGISTIC, MAX_POOL_2D, MAXIMUM, MEAN, MINIMUM, MUL, NEG, NOT_EQUAL, PACK, PAD, PADV2, POW, \
PRELU, QUANTIZE, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, RELU, RELU6, RELU_N1_TO_1, RESHAPE, \
RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, ROUND, RSQRT, SELECT, SELECT_V2, SHAPE, SIN, SLICE, \
SOFTMAX, SPLIT, SPLIT_V, SQRT, SQUARE, SQUARED_DIFFERENCE, SQUEEZE, STRIDED_SLICE, SUB, SUM, \
TANH, TRANSPOSE, TRANSPOSE_CONV, UNIDIRECTIONAL_SEQUENCE_LSTM, UNPACK";

impl Ctx<'_, '_> {
    /// The file index of input `k`, which must be given.
    fn in_index(&self, k: usize) -> R<usize> {
        self.opt_in(k)
            .ok_or_else(|| OpError(format!("input {k} is missing")))
    }

    /// The file index of input `k`, or `None` when absent (-1 or past the list).
    fn opt_in(&self, k: usize) -> Option<usize> {
        self.inputs
            .get(k)
            .and_then(|&i| usize::try_from(i).ok())
            .filter(|&i| i < self.imp.tensors.len())
    }

    /// Input `k` as a float value (int8 dequantized).
    fn float_in(&mut self, k: usize) -> R<TensorId> {
        let i = self.in_index(k)?;
        self.imp.float(i)
    }

    /// Input `k` as stored (int8 stays int8).
    fn value_in(&mut self, k: usize) -> R<TensorId> {
        let i = self.in_index(k)?;
        self.imp.value(i)
    }

    fn out_file(&self, k: usize) -> R<&super::FileTensor<'_>> {
        let o = *self
            .outputs
            .get(k)
            .ok_or_else(|| OpError(format!("output {k} is missing")))?;
        self.imp.file(o)
    }

    fn rank(&self, id: TensorId) -> usize {
        self.imp.graph.tensor(id).shape.len()
    }

    fn shape(&self, id: TensorId) -> Vec<usize> {
        self.imp.graph.tensor(id).shape.clone()
    }

    /// The integer values of constant input `k` (shapes, indices, paddings, slice bounds): each within
    /// int32's range, as TFLite writes them, so that the arithmetic on them cannot overflow.
    fn ints(&self, k: usize, what: &str) -> R<Vec<i64>> {
        let i = *self
            .inputs
            .get(k)
            .ok_or_else(|| OpError(format!("input {k} ({what}) is missing")))?;
        let v = self.imp.const_ints(i, what)?;
        if let Some(x) = v.iter().find(|x| i32::try_from(**x).is_err()) {
            return Err(OpError(format!("{what}: {x} is outside the int32 range")));
        }
        Ok(v)
    }

    /// Constant input `k` as axes of a rank-`rank` tensor (negative ones counted from the end).
    fn axes(&self, k: usize, rank: usize, what: &str) -> R<Vec<usize>> {
        self.ints(k, what)?
            .into_iter()
            .map(|a| resolve_axis(a, rank).map_err(|e| OpError(format!("{what}: {e}"))))
            .collect()
    }

    /// Adds the node computing the operator's (first) output.
    fn node(&mut self, op: Op, inputs: Vec<TensorId>) -> R<TensorId> {
        let (name, source) = (self.name.clone(), self.source.clone());
        self.imp
            .emit(&name, &format!("{name}.float"), &source, op, inputs)
    }

    /// Adds an intermediate node (`suffix` names it).
    fn tmp(&mut self, suffix: &str, op: Op, inputs: Vec<TensorId>) -> R<TensorId> {
        let name = format!("{}.{suffix}", self.name);
        let source = self.source.clone();
        self.imp.emit(&name, &name, &source, op, inputs)
    }

    /// Binds `value` as the operator's output 0.
    fn finish(&mut self, value: TensorId) -> R<()> {
        self.finish_k(0, value)
    }

    fn finish_k(&mut self, k: usize, value: TensorId) -> R<()> {
        let o = *self
            .outputs
            .get(k)
            .ok_or_else(|| OpError(format!("output {k} is missing")))?;
        let o = usize::try_from(o)
            .ok()
            .filter(|&o| o < self.imp.tensors.len())
            .ok_or_else(|| OpError(format!("output tensor index {o} is outside the model")))?;
        let name = self.name.clone();
        self.imp.bind(&name, o, value).map(|_| ())
    }

    /// The fused activation: the IR op's clamp, or (TANH) a Unary after the op.
    fn activation(&self, act: ActivationFunctionType) -> R<(Activation, Option<UnaryOp>)> {
        Ok(match act {
            ActivationFunctionType::None => (Activation::None, None),
            ActivationFunctionType::Relu => (Activation::Relu, None),
            ActivationFunctionType::Relu6 => (Activation::Relu6, None),
            ActivationFunctionType::ReluN1To1 => (
                Activation::Clip {
                    min: -1.0,
                    max: 1.0,
                },
                None,
            ),
            ActivationFunctionType::Tanh => (Activation::None, Some(UnaryOp::Tanh)),
            ActivationFunctionType::SignBit => {
                return Err(OpError(
                    "the fused activation SIGN_BIT is not supported".into(),
                ))
            }
        })
    }

    /// `op` over `x`, `w` and the optional bias at input `bias`, then the unary part of its fused
    /// activation: the operator's output.
    fn weighted(
        &mut self,
        op: Op,
        x: TensorId,
        w: TensorId,
        bias: usize,
        after: Option<UnaryOp>,
    ) -> R<()> {
        let mut inputs = vec![x, w];
        if self.opt_in(bias).is_some() {
            inputs.push(self.float_in(bias)?);
        }
        let y = self.node(op, inputs)?;
        self.finish_act(y, after)
    }

    /// `y` through a fused activation as Unary ops (for an op with no clamp of its own), bound as
    /// the output.
    fn finish_unfused(&mut self, y: TensorId, act: ActivationFunctionType) -> R<()> {
        let (clamp, after) = self.activation(act)?;
        let unary = match clamp {
            Activation::None => None,
            Activation::Relu => Some(UnaryOp::Relu),
            Activation::Relu6 => Some(UnaryOp::Relu6),
            Activation::Clip { min, max } => Some(UnaryOp::Clip { min, max }),
        };
        let y = match unary {
            Some(u) => self.tmp("clamp", Op::Unary(u), vec![y])?,
            None => y,
        };
        self.finish_act(y, after)
    }

    /// `y` through the unary part of a fused activation, bound as the output.
    fn finish_act(&mut self, y: TensorId, after: Option<UnaryOp>) -> R<()> {
        let y = match after {
            Some(u) => self.tmp("activation", Op::Unary(u), vec![y])?,
            None => y,
        };
        self.finish(y)
    }
}

impl Ctx<'_, '_> {
    /// The `(scale, zero point)` of input 0 and output 0 when both are int8.
    fn int8_io(&self) -> R<Option<(int8::Int8Params, int8::Int8Params)>> {
        let (i, o) = (self.in_index(0)?, self.out_file(0)?);
        if self.imp.tensors[i].dtype != TensorType::Int8 || o.dtype != TensorType::Int8 {
            return Ok(None);
        }
        let o = usize::try_from(self.outputs[0]).map_err(|_| OpError("no output".into()))?;
        Ok(Some((self.imp.int8_params(i)?, self.imp.int8_params(o)?)))
    }
}

/// An int8 element-wise op as the lookup of `entries` (TFLM's integer results, [`int8`]).
fn table(c: &mut Ctx<'_, '_>, function: &'static str, entries: Vec<i8>) -> R<()> {
    let x = c.value_in(0)?;
    let name = format!("{}.table", c.name);
    let t = c.imp.graph.add_constant_of(
        &name,
        vec![entries.len()],
        ConstData::I64(entries.iter().map(|&v| v.into()).collect()),
        DType::I8,
    );
    let y = c.node(Op::Quant(QuantOp::Lut { function }), vec![x, t])?;
    let o = usize::try_from(c.outputs[0]).map_err(|_| OpError("no output".into()))?;
    let (scale, zero_point) = c.imp.int8_params(o)?;
    c.imp.graph.tensor_mut(y).quant = Some(Quant::per_tensor(scale, zero_point));
    c.finish(y)
}

fn binary_op(op: BinaryOp) -> Op {
    Op::Binary {
        op,
        act: Activation::None,
    }
}

/// `[top, left, bottom, right]` padding of SAME (TFLite's: the odd cell at the end) or VALID for a
/// window of `kernel` (dilated) and `stride` over `[h, w]`.
fn window_pads(
    padding: Padding,
    size: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
) -> [usize; 4] {
    if padding == Padding::Valid {
        return [0; 4];
    }
    let mut pads = [0; 4];
    for a in 0..2 {
        let out = size[a].div_ceil(stride[a].max(1));
        let effective = (kernel[a].max(1) - 1) * dilation[a] + 1;
        let total = ((out.max(1) - 1) * stride[a] + effective).saturating_sub(size[a]);
        pads[a] = total / 2;
        pads[a + 2] = total - total / 2;
    }
    pads
}

fn positive(v: i32, what: &str) -> R<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| OpError(format!("{what} {v} must be positive")))
}

fn conv(c: &mut Ctx<'_, '_>, options: Option<O<'_>>, depthwise: bool) -> R<()> {
    let (padding, stride, dilation, act) = match options {
        Some(O::Conv2DOptions(o)) => (
            o.padding()?,
            [o.stride_h()?, o.stride_w()?],
            [o.dilation_h_factor()?, o.dilation_w_factor()?],
            o.fused_activation_function()?,
        ),
        Some(O::DepthwiseConv2DOptions(o)) => (
            o.padding()?,
            [o.stride_h()?, o.stride_w()?],
            [o.dilation_h_factor()?, o.dilation_w_factor()?],
            o.fused_activation_function()?,
        ),
        _ => return Err(OpError("the operator has no convolution options".into())),
    };
    let strides = [
        positive(stride[0], "stride")?,
        positive(stride[1], "stride")?,
    ];
    let dilations = [
        positive(dilation[0], "dilation")?,
        positive(dilation[1], "dilation")?,
    ];
    let x = c.float_in(0)?;
    let w = if depthwise {
        depthwise_weights(c)?
    } else {
        c.float_in(1)?
    };
    let (xs, ws) = (c.shape(x), c.shape(w));
    let (&[_, h, wd, ch], &[_, kh, kw, wc]) = (&xs[..], &ws[..]) else {
        return Err(OpError(format!(
            "input {xs:?} and weights {ws:?} must have rank 4"
        )));
    };
    let groups = if wc == 0 || ch % wc != 0 {
        return Err(OpError(format!(
            "input channels {ch} are not a multiple of the weights' {wc}"
        )));
    } else {
        ch / wc
    };
    let (act, after) = c.activation(act)?;
    let conv = Conv2d {
        strides,
        dilations,
        pads: window_pads(padding, [h, wd], [kh, kw], strides, dilations),
        groups,
        act,
        layout: SpatialLayout::Nhwc,
    };
    c.weighted(Op::Conv2d(conv), x, w, 2, after)
}

/// A depthwise convolution's weights `[1, H, W, C*M]` as the grouped convolution's OHWI
/// `[C*M, H, W, 1]`, permuted at conversion time (a per-channel quantization moves from dim 3 to 0).
fn depthwise_weights(c: &mut Ctx<'_, '_>) -> R<TensorId> {
    let w = c.float_in(1)?;
    let t = c.imp.graph.tensor(w).clone();
    let (Some(ConstData::F32(v)), &[1, kh, kw, oc]) = (&t.data, &t.shape[..]) else {
        return Err(OpError(format!(
            "the depthwise weights must be a constant [1, H, W, C*M], not {:?}",
            t.shape
        )));
    };
    let mut out = vec![0.0; v.len()];
    for (i, &value) in v.iter().enumerate() {
        let (o, hw) = (i % oc, i / oc);
        out[o * kh * kw + hw] = value;
    }
    // Per-channel parameters follow the output channel, from dim 3 to dim 0.
    let quant = match t.quant {
        Some(q) if q.scales.len() > 1 && (q.axis != 3 || q.scales.len() != oc) => {
            return Err(OpError(
                "per-channel depthwise weights must be quantized along dim 3".into(),
            ))
        }
        Some(q) => Some(Quant { axis: 0, ..q }),
        None => None,
    };
    let name = format!("{}.ohwi", t.name);
    let id = c
        .imp
        .graph
        .add_constant(&name, vec![oc, kh, kw, 1], ConstData::F32(out));
    c.imp.graph.tensor_mut(id).quant = quant;
    Ok(id)
}

fn transpose_conv(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let Some(O::TransposeConvOptions(o)) = options else {
        return Err(OpError("the operator has no TRANSPOSE_CONV options".into()));
    };
    let strides = [
        positive(o.stride_h()?, "stride")?,
        positive(o.stride_w()?, "stride")?,
    ];
    let (act, after) = c.activation(o.fused_activation_function()?)?;
    let out_shape = c.ints(0, "output_shape")?;
    let w = c.float_in(1)?;
    let x = c.float_in(2)?;
    let (xs, ws) = (c.shape(x), c.shape(w));
    let (&[_, h, wd, _], &[_, kh, kw, _], &[_, oh, ow, _]) = (&xs[..], &ws[..], &out_shape[..])
    else {
        return Err(OpError(format!(
            "input {xs:?}, weights {ws:?} and output shape {out_shape:?} must have rank 4"
        )));
    };
    let (oh, ow) = (
        usize::try_from(oh).map_err(|_| OpError("negative output height".into()))?,
        usize::try_from(ow).map_err(|_| OpError("negative output width".into()))?,
    );
    let mut pads = [0; 4];
    let mut output_padding = [0; 2];
    for (a, (size, k, out)) in [(h, kh, oh), (wd, kw, ow)].into_iter().enumerate() {
        let full = (size.max(1) - 1) * strides[a] + k;
        // TFLite pads a transposed convolution as the forward one from its output to its input.
        let total = match o.padding()? {
            Padding::Same => full.saturating_sub(out),
            Padding::Valid => 0,
        };
        let before = total / 2;
        pads[a] = before;
        let kept = full - before;
        if kept >= out {
            pads[a + 2] = kept - out;
        } else {
            output_padding[a] = out - kept;
        }
    }
    let conv = ConvTranspose2d {
        strides,
        dilations: [1, 1],
        pads,
        output_padding,
        groups: 1,
        act,
        layout: SpatialLayout::Nhwc,
    };
    c.weighted(Op::ConvTranspose2d(conv), x, w, 3, after)
}

fn fully_connected(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (act, keep) = match options {
        Some(O::FullyConnectedOptions(o)) => {
            if o.weights_format()? != super::schema::FullyConnectedOptionsWeightsFormat::Default {
                return Err(OpError("shuffled weight formats are not supported".into()));
            }
            (o.fused_activation_function()?, o.keep_num_dims()?)
        }
        _ => (ActivationFunctionType::None, false),
    };
    let (act, after) = c.activation(act)?;
    let mut x = c.float_in(0)?;
    let w = c.float_in(1)?;
    let [_, inner] = c.shape(w)[..] else {
        return Err(OpError(format!(
            "weights {:?} must be [OUT, IN]",
            c.shape(w)
        )));
    };
    let xs = c.shape(x);
    if !keep && xs.len() != 2 {
        let n: usize = xs.iter().product();
        if inner == 0 || !n.is_multiple_of(inner) {
            return Err(OpError(format!(
                "input {xs:?} does not flatten to rows of {inner}"
            )));
        }
        x = c.tmp(
            "flattened",
            Op::Reshape {
                shape: vec![n / inner, inner],
            },
            vec![x],
        )?;
    }
    c.weighted(Op::FullyConnected { act }, x, w, 2, after)
}

fn pool(c: &mut Ctx<'_, '_>, options: Option<O<'_>>, max: bool) -> R<()> {
    let Some(O::Pool2DOptions(o)) = options else {
        return Err(OpError("the operator has no pooling options".into()));
    };
    let kernel = [
        positive(o.filter_height()?, "filter height")?,
        positive(o.filter_width()?, "filter width")?,
    ];
    let strides = [
        positive(o.stride_h()?, "stride")?,
        positive(o.stride_w()?, "stride")?,
    ];
    let act = o.fused_activation_function()?;
    let x = c.float_in(0)?;
    let [_, h, w, _] = c.shape(x)[..] else {
        return Err(OpError(format!("input {:?} must have rank 4", c.shape(x))));
    };
    let p = Pool2d {
        kernel,
        strides,
        pads: window_pads(o.padding()?, [h, w], kernel, strides, [1, 1]),
        count_include_pad: false,
        layout: SpatialLayout::Nhwc,
    };
    let y = c.node(if max { Op::MaxPool(p) } else { Op::AvgPool(p) }, vec![x])?;
    c.finish_unfused(y, act)
}

fn binary(c: &mut Ctx<'_, '_>, op: BinaryOp, act: ActivationFunctionType) -> R<()> {
    let (act, after) = c.activation(act)?;
    let (a, b) = (c.float_in(0)?, c.float_in(1)?);
    let y = c.node(Op::Binary { op, act }, vec![a, b])?;
    c.finish_act(y, after)
}

fn unary(c: &mut Ctx<'_, '_>, op: UnaryOp) -> R<()> {
    let x = c.float_in(0)?;
    let y = c.node(Op::Unary(op), vec![x])?;
    c.finish(y)
}

/// RESHAPE (new shape from its second input or its options), SQUEEZE and EXPAND_DIMS: the output's
/// shape as the file gives it, checked against the op's own shape where it has one.
fn reshape(c: &mut Ctx<'_, '_>, op: B, options: Option<O<'_>>) -> R<()> {
    let x = c.float_in(0)?;
    let n: usize = c.shape(x).iter().product();
    let target: Option<Vec<i64>> = match op {
        B::Reshape if c.opt_in(1).is_some() => Some(c.ints(1, "shape")?),
        B::Reshape => match options {
            Some(O::ReshapeOptions(o)) => o.new_shape()?.map(|v| v.iter().map(i64::from).collect()),
            _ => None,
        },
        _ => None,
    };
    let shape = match target {
        Some(t) => resolve_shape(&t, n)?,
        None => c.out_file(0)?.shape.clone(),
    };
    let y = c.node(Op::Reshape { shape }, vec![x])?;
    c.finish(y)
}

/// A shape with at most one -1, resolved for `n` elements.
fn resolve_shape(t: &[i64], n: usize) -> R<Vec<usize>> {
    let known = t
        .iter()
        .filter(|&&d| d >= 0)
        .try_fold(1usize, |a, &d| a.checked_mul(d as usize))
        .ok_or_else(|| OpError(format!("shape {t:?} holds more elements than memory")))?;
    let unknown = t.iter().filter(|&&d| d < 0).count();
    t.iter()
        .map(|&d| match d {
            -1 if unknown == 1 && known > 0 && n.is_multiple_of(known) => Ok(n / known),
            d if d >= 0 => Ok(d as usize),
            _ => Err(OpError(format!(
                "shape {t:?} does not resolve for {n} elements"
            ))),
        })
        .collect()
}

fn softmax(c: &mut Ctx<'_, '_>, options: Option<O<'_>>, log: bool) -> R<()> {
    let beta = match options {
        Some(O::SoftmaxOptions(o)) => o.beta()?,
        _ => 1.0,
    };
    let mut x = c.float_in(0)?;
    let axis = c.rank(x).saturating_sub(1);
    if beta != 1.0 {
        let b = c.imp.graph.add_constant(
            &format!("{}.beta", c.name),
            vec![],
            ConstData::F32(vec![beta]),
        );
        x = c.tmp("scaled", binary_op(BinaryOp::Mul), vec![x, b])?;
    }
    let op = if log {
        Op::LogSoftmax { axis }
    } else {
        Op::Softmax { axis }
    };
    let y = c.node(op, vec![x])?;
    c.finish(y)
}

fn pad(c: &mut Ctx<'_, '_>) -> R<()> {
    let x = c.float_in(0)?;
    let rank = c.rank(x);
    let p = c.ints(1, "paddings")?;
    if p.len() != 2 * rank || p.iter().any(|&v| v < 0) {
        return Err(OpError(format!(
            "paddings {p:?} must be [{rank}, 2] of non-negative values"
        )));
    }
    let value = match c.opt_in(2) {
        Some(_) => {
            let v = c.float_in(2)?;
            match &c.imp.graph.tensor(v).data {
                Some(ConstData::F32(d)) if d.len() == 1 => d[0],
                _ => return Err(OpError("the pad value must be a constant scalar".into())),
            }
        }
        // PAD fills with zero, the zero point of a quantized tensor: 0.0 once dequantized.
        None => 0.0,
    };
    let before = (0..rank).map(|a| p[2 * a] as usize).collect();
    let after = (0..rank).map(|a| p[2 * a + 1] as usize).collect();
    let pad = Op::Pad {
        before,
        after,
        value,
    };
    let y = c.node(pad, vec![x])?;
    c.finish(y)
}

fn concat(c: &mut Ctx<'_, '_>, axis: i32, act: ActivationFunctionType) -> R<()> {
    let xs = (0..c.inputs.len())
        .map(|k| c.float_in(k))
        .collect::<R<Vec<_>>>()?;
    let rank = xs.first().map_or(0, |&x| c.rank(x));
    let axis = resolve_axis(axis.into(), rank).map_err(OpError)?;
    let y = c.node(Op::Concat { axis }, xs)?;
    c.finish_unfused(y, act)
}

/// PACK: each input reshaped with a dim of 1 at `axis`, then concatenated there.
fn pack(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let axis = match options {
        Some(O::PackOptions(o)) => o.axis()?,
        _ => 0,
    };
    let xs = (0..c.inputs.len())
        .map(|k| c.float_in(k))
        .collect::<R<Vec<_>>>()?;
    let rank = xs.first().map_or(0, |&x| c.rank(x));
    let axis = resolve_axis(axis.into(), rank + 1).map_err(OpError)?;
    let mut parts = Vec::with_capacity(xs.len());
    for (k, x) in xs.into_iter().enumerate() {
        let mut shape = c.shape(x);
        shape.insert(axis, 1);
        parts.push(c.tmp(&format!("expanded{k}"), Op::Reshape { shape }, vec![x])?);
    }
    let y = c.node(Op::Concat { axis }, parts)?;
    c.finish(y)
}

/// SPLIT (`axis, x`), SPLIT_V (`x, size_splits, axis`) and UNPACK: one Slice per output.
fn split(c: &mut Ctx<'_, '_>, op: B, options: Option<O<'_>>) -> R<()> {
    let (xk, axis) = match op {
        B::Split => (1, None),
        B::SplitV => (0, None),
        _ => (
            0,
            Some(match options {
                Some(O::UnpackOptions(o)) => i64::from(o.axis()?),
                _ => 0,
            }),
        ),
    };
    let x = c.float_in(xk)?;
    let dims = c.shape(x);
    let axis = match (op, axis) {
        (_, Some(a)) => resolve_axis(a, dims.len()).map_err(OpError)?,
        (B::Split, None) => single_axis(c, 0, dims.len())?,
        _ => single_axis(c, 2, dims.len())?,
    };
    let n = c.outputs.len();
    let len = dims[axis];
    let sizes: Vec<usize> = if op == B::SplitV {
        let s = c.ints(1, "size_splits")?;
        let known: i64 = s.iter().filter(|&&v| v >= 0).sum();
        s.iter()
            .map(|&v| if v < 0 { len as i64 - known } else { v })
            .map(|v| {
                usize::try_from(v)
                    .map_err(|_| OpError(format!("size_splits {s:?} do not fit {len}")))
            })
            .collect::<R<_>>()?
    } else {
        if n == 0 || !len.is_multiple_of(n) {
            return Err(OpError(format!(
                "axis {axis} of {dims:?} does not split into {n}"
            )));
        }
        vec![len / n; n]
    };
    if sizes.len() != n || sizes.iter().sum::<usize>() != len {
        return Err(OpError(format!(
            "sizes {sizes:?} do not split axis {axis} of {dims:?} into {n}"
        )));
    }
    let mut start = 0;
    for (k, &size) in sizes.iter().enumerate() {
        let mut s = Slice {
            start: vec![0; dims.len()],
            step: vec![1; dims.len()],
            size: dims.clone(),
        };
        s.start[axis] = start;
        s.size[axis] = size;
        start += size;
        let mut y = c.tmp(&format!("part{k}"), Op::Slice(s), vec![x])?;
        if op == B::Unpack {
            let mut shape = c.shape(y);
            shape.remove(axis);
            y = c.tmp(&format!("part{k}.squeezed"), Op::Reshape { shape }, vec![y])?;
        }
        c.finish_k(k, y)?;
    }
    Ok(())
}

fn single_axis(c: &Ctx<'_, '_>, k: usize, rank: usize) -> R<usize> {
    match c.axes(k, rank, "axis")?[..] {
        [a] => Ok(a),
        _ => Err(OpError("the axis input must hold one axis".into())),
    }
}

fn slice(c: &mut Ctx<'_, '_>) -> R<()> {
    let x = c.float_in(0)?;
    let dims = c.shape(x);
    let (begin, size) = (c.ints(1, "begin")?, c.ints(2, "size")?);
    if begin.len() != dims.len() || size.len() != dims.len() {
        return Err(OpError(format!(
            "begin {begin:?} and size {size:?} must have {} values",
            dims.len()
        )));
    }
    let mut s = Slice {
        start: Vec::new(),
        step: vec![1; dims.len()],
        size: Vec::new(),
    };
    for a in 0..dims.len() {
        let b = usize::try_from(begin[a]).ok().filter(|&b| b <= dims[a]);
        let Some(b) = b else {
            return Err(OpError(format!("begin {begin:?} is outside {dims:?}")));
        };
        let n = if size[a] < 0 {
            dims[a] - b
        } else {
            size[a] as usize
        };
        if b + n > dims[a] {
            return Err(OpError(format!(
                "begin {begin:?} and size {size:?} reach past {dims:?}"
            )));
        }
        s.start.push(b);
        s.size.push(n);
    }
    let y = c.node(Op::Slice(s), vec![x])?;
    c.finish(y)
}

/// STRIDED_SLICE with TensorFlow's rules: masks pick the full range, negative indices count from
/// the end, indices are clamped, `shrink_axis_mask` drops an axis (a Reshape after the Slice).
fn strided_slice(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (bm, em, shrink, offset) = match options {
        Some(O::StridedSliceOptions(o)) => {
            if o.ellipsis_mask()? != 0 || o.new_axis_mask()? != 0 {
                return Err(OpError(
                    "ellipsis_mask and new_axis_mask are not supported".into(),
                ));
            }
            (
                o.begin_mask()?,
                o.end_mask()?,
                o.shrink_axis_mask()?,
                o.offset()?,
            )
        }
        _ => (0, 0, 0, false),
    };
    let x = c.float_in(0)?;
    let dims = c.shape(x);
    let (begin, end) = (c.ints(1, "begin")?, c.ints(2, "end")?);
    let strides = match c.opt_in(3) {
        Some(_) => c.ints(3, "strides")?,
        None => vec![1; begin.len()],
    };
    if begin.len() > dims.len() || end.len() != begin.len() || strides.len() != begin.len() {
        return Err(OpError(format!(
            "begin {begin:?}, end {end:?} and strides {strides:?} do not fit {dims:?}"
        )));
    }
    let mut s = Slice {
        start: Vec::new(),
        step: Vec::new(),
        size: Vec::new(),
    };
    let mut out_shape = Vec::new();
    for (a, &d) in dims.iter().enumerate() {
        let d = d as i64;
        let bit = |m: i32| a < 32 && m & (1 << a) != 0;
        let (b, e, st) = match (begin.get(a), end.get(a), strides.get(a)) {
            (Some(&b), Some(&e), Some(&st)) => (b, if offset { b + e } else { e }, st),
            _ => (0, d, 1),
        };
        if st == 0 {
            return Err(OpError("a stride is 0".into()));
        }
        let norm = |v: i64| if v < 0 { v + d } else { v };
        let (start, size) = if bit(shrink) {
            let i = norm(b);
            if !(0..d).contains(&i) {
                return Err(OpError(format!(
                    "index {b} is outside axis {a} of {dims:?}"
                )));
            }
            (i, 1)
        } else if st > 0 {
            let lo = if bit(bm) { 0 } else { norm(b).clamp(0, d) };
            let hi = if bit(em) { d } else { norm(e).clamp(0, d) };
            (lo, if hi > lo { (hi - lo + st - 1) / st } else { 0 })
        } else {
            let lo = if bit(bm) {
                d - 1
            } else {
                norm(b).clamp(-1, d - 1)
            };
            let hi = if bit(em) {
                -1
            } else {
                norm(e).clamp(-1, d - 1)
            };
            (
                lo.max(0),
                if lo > hi { (lo - hi - st - 1) / -st } else { 0 },
            )
        };
        s.start.push(start as usize);
        s.step.push(if bit(shrink) { 1 } else { st });
        s.size.push(size as usize);
        if !bit(shrink) {
            out_shape.push(size as usize);
        }
    }
    let mut y = c.node(Op::Slice(s), vec![x])?;
    if out_shape.len() != dims.len() {
        y = c.tmp("shrunk", Op::Reshape { shape: out_shape }, vec![y])?;
    }
    c.finish(y)
}

fn reduce(c: &mut Ctx<'_, '_>, op: ReduceOp, options: Option<O<'_>>) -> R<()> {
    let keepdims = match options {
        Some(O::ReducerOptions(o)) => o.keep_dims()?,
        _ => false,
    };
    let x = c.float_in(0)?;
    let mut axes = c.axes(1, c.rank(x), "axis")?;
    axes.sort_unstable();
    axes.dedup();
    let y = c.node(Op::Reduce { op, axes, keepdims }, vec![x])?;
    c.finish(y)
}

fn resize(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (nearest, align, half) = match options {
        Some(O::ResizeBilinearOptions(o)) => (false, o.align_corners()?, o.half_pixel_centers()?),
        Some(O::ResizeNearestNeighborOptions(o)) => {
            (true, o.align_corners()?, o.half_pixel_centers()?)
        }
        _ => return Err(OpError("the operator has no resize options".into())),
    };
    let x = c.float_in(0)?;
    let [_, h, w, _] = c.shape(x)[..] else {
        return Err(OpError(format!("input {:?} must have rank 4", c.shape(x))));
    };
    let size = c.ints(1, "size")?;
    let [oh, ow] = size[..] else {
        return Err(OpError(format!("size {size:?} must hold [height, width]")));
    };
    let (oh, ow) = (
        positive(oh as i32, "output height")?,
        positive(ow as i32, "output width")?,
    );
    // TFLite's coordinate rules in ONNX's terms: align_corners maps corner to corner; half pixel
    // centres shift by half a cell (nearest then rounds halves up: floor((o + 0.5) * in / out));
    // neither is the asymmetric map (nearest floors).
    let coord = if align {
        CoordMode::AlignCorners
    } else if half {
        CoordMode::HalfPixel
    } else {
        CoordMode::Asymmetric
    };
    let mode = match (nearest, align || half) {
        (true, true) => ResizeMode::Nearest(NearestMode::RoundPreferCeil),
        (true, false) => ResizeMode::Nearest(NearestMode::Floor),
        (false, _) => ResizeMode::Linear,
    };
    let params = ResizeParams {
        mode,
        coord,
        scale_h: oh as f32 / h.max(1) as f32,
        scale_w: ow as f32 / w.max(1) as f32,
        channels_last: true,
    };
    let y = c.node(
        Op::Resize(Resize {
            params,
            size: [oh, ow],
        }),
        vec![x],
    )?;
    c.finish(y)
}

fn gather(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (axis, batch_dims) = match options {
        Some(O::GatherOptions(o)) => (o.axis()?, o.batch_dims()?),
        _ => (0, 0),
    };
    if batch_dims != 0 {
        return Err(OpError("batch_dims other than 0 are not supported".into()));
    }
    let x = c.float_in(0)?;
    let dims = c.shape(x);
    let axis = resolve_axis(axis.into(), dims.len()).map_err(OpError)?;
    let idx_file = c.in_index(1)?;
    if c.imp.tensors[idx_file].data.is_none() {
        // Indices computed at run time: the embedding lookup of a constant table's rows.
        let idx = c.value_in(1)?;
        if axis != 0 || !c.imp.graph.is_const(x) {
            return Err(OpError(
                "indices computed at run time are supported on axis 0 of a constant table only"
                    .into(),
            ));
        }
        let y = c.node(Op::Embedding, vec![x, idx])?;
        return c.finish(y);
    }
    let raw = c.ints(1, "indices")?;
    let shape = c.imp.tensors[idx_file].shape.clone();
    let len = dims[axis] as i64;
    let values = raw
        .iter()
        .map(|&i| {
            let r = if i < 0 { i + len } else { i };
            if (0..len).contains(&r) {
                Ok(r as f32)
            } else {
                Err(OpError(format!(
                    "index {i} is outside axis {axis} of {dims:?}"
                )))
            }
        })
        .collect::<R<Vec<_>>>()?;
    let idx = c.imp.graph.add_constant(
        &format!("{}.indices", c.name),
        shape,
        ConstData::F32(values),
    );
    let y = c.node(Op::Gather { axis }, vec![x, idx])?;
    c.finish(y)
}

fn batch_matmul(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (adj_x, adj_y) = match options {
        Some(O::BatchMatMulOptions(o)) => (o.adj_x()?, o.adj_y()?),
        _ => (false, false),
    };
    let mut a = c.float_in(0)?;
    let mut b = c.float_in(1)?;
    for (adj, v, name) in [(adj_x, &mut a, "a_t"), (adj_y, &mut b, "b_t")] {
        if adj {
            let r = c.rank(*v);
            if r < 2 {
                return Err(OpError("an adjoint operand needs rank 2 or more".into()));
            }
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 1, r - 2);
            *v = c.tmp(name, Op::Transpose { perm }, vec![*v])?;
        }
    }
    let y = c.node(Op::MatMul, vec![a, b])?;
    c.finish(y)
}

/// UNIDIRECTIONAL_SEQUENCE_LSTM (24 inputs: x; the input and recurrent weights and the biases of the
/// input, forget, cell and output gates; the states) as the recurrent kernel's LSTM cell, whose
/// gates come in ONNX's order (input, output, forget, cell): the weights are regrouped at
/// conversion time. TFLite keeps the state between invocations; a blob starts from zero on every
/// run, which the first invocation of a fresh interpreter does too.
fn lstm(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (act, cell_clip, proj_clip, time_major) = match options {
        Some(O::UnidirectionalSequenceLstmOptions(o)) => (
            o.fused_activation_function()?,
            o.cell_clip()?,
            o.proj_clip()?,
            o.time_major()?,
        ),
        _ => (ActivationFunctionType::Tanh, 0.0, 0.0, true),
    };
    if act != ActivationFunctionType::Tanh || cell_clip != 0.0 || proj_clip != 0.0 {
        return Err(OpError(
            "only the tanh cell activation without cell or projection clipping is supported".into(),
        ));
    }
    for (k, n, what) in [
        (9, 3, "peephole"),
        (16, 2, "projection"),
        (20, 4, "layer-norm"),
    ] {
        if (k..k + n).any(|k| c.opt_in(k).is_some()) {
            return Err(OpError(format!("{what} weights are not supported")));
        }
    }
    let mut x = c.float_in(0)?;
    if !time_major {
        x = c.tmp(
            "time_major",
            Op::Transpose {
                perm: vec![1, 0, 2],
            },
            vec![x],
        )?;
    }
    let [seq, batch, _] = c.shape(x)[..] else {
        return Err(OpError(format!("input {:?} must have rank 3", c.shape(x))));
    };
    // TFLite's gate inputs in its order (input, forget, cell, output), taken in ONNX's (i, o, f, c).
    const ONNX_ORDER: [usize; 4] = [0, 3, 1, 2];
    let mut rows = |first: usize, what: &str| -> R<(Vec<f32>, Vec<usize>)> {
        let mut all = Vec::new();
        let mut dims = Vec::new();
        for g in ONNX_ORDER {
            let t = c.float_in(first + g)?;
            let t = c.imp.graph.tensor(t);
            let Some(ConstData::F32(v)) = &t.data else {
                return Err(OpError(format!("the {what} must be float constants")));
            };
            all.extend_from_slice(v);
            dims = t.shape.clone();
        }
        Ok((all, dims))
    };
    let (w, wd) = rows(1, "input weights")?;
    let (r, rd) = rows(5, "recurrent weights")?;
    let (b, _) = rows(12, "gate biases")?;
    let (&[hidden, input], &[_, rh]) = (&wd[..], &rd[..]) else {
        return Err(OpError(format!(
            "weights {wd:?} and {rd:?} must have rank 2"
        )));
    };
    if rh != hidden || b.len() != 4 * hidden {
        return Err(OpError(
            "projection-free LSTM weights must be [hidden, *]".into(),
        ));
    }
    let name = c.name.clone();
    let g = &mut c.imp.graph;
    let w = g.add_constant(
        &format!("{name}.w"),
        vec![1, 4 * hidden, input],
        ConstData::F32(w),
    );
    let r = g.add_constant(
        &format!("{name}.r"),
        vec![1, 4 * hidden, hidden],
        ConstData::F32(r),
    );
    // ONNX's bias is [Wb, Rb]: TFLite's one bias per gate, then zeros.
    let mut bias = b;
    bias.resize(8 * hidden, 0.0);
    let b = g.add_constant(
        &format!("{name}.b"),
        vec![1, 8 * hidden],
        ConstData::F32(bias),
    );
    let params = RnnParams {
        cell: RnnCell::Lstm { peepholes: false },
        direction: RnnDirection::Forward,
        clip: f32::INFINITY,
    };
    let states = c.tmp("states", Op::Core(OpKind::Rnn(params)), vec![x, w, r, b])?;
    let s = Slice {
        start: vec![0; 4],
        step: vec![1; 4],
        size: vec![seq, 1, batch, hidden],
    };
    let y = c.tmp("y", Op::Slice(s), vec![states])?;
    let y = c.tmp(
        "y_rows",
        Op::Reshape {
            shape: vec![seq, batch, hidden],
        },
        vec![y],
    )?;
    let y = if time_major {
        y
    } else {
        c.node(
            Op::Transpose {
                perm: vec![1, 0, 2],
            },
            vec![y],
        )?
    };
    c.finish(y)
}
