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

mod array;
mod nn;

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::compare::CompareOp;
use ember_core::ops::math::logical::LogicalOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::reduce::ReduceOp;

use super::schema::{
    ActivationFunctionType, BuiltinOperator as B, BuiltinOptionsRef as O, OperatorRef, TensorType,
};
use super::{int8, Importer, OpCode, OpError};
use crate::ir::quant::{Quant, QuantOp};
use crate::ir::shape::resolve_axis;
use crate::ir::{ConstData, DType, Op, TensorId};

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
        B::Conv2d => nn::conv(&mut c, options, false),
        B::DepthwiseConv2d => nn::conv(&mut c, options, true),
        B::TransposeConv => nn::transpose_conv(&mut c, options),
        B::FullyConnected => nn::fully_connected(&mut c, options),
        B::AveragePool2d | B::MaxPool2d => nn::pool(&mut c, options, code.builtin == B::MaxPool2d),
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
        B::Reshape | B::Squeeze | B::ExpandDims => array::reshape(&mut c, code.builtin, options),
        B::Softmax | B::LogSoftmax => nn::softmax(&mut c, options, code.builtin == B::LogSoftmax),
        B::Pad | B::Padv2 => array::pad(&mut c),
        B::Concatenation => {
            let (axis, act) = match options {
                Some(O::ConcatenationOptions(o)) => (o.axis()?, o.fused_activation_function()?),
                _ => (0, ActivationFunctionType::None),
            };
            array::concat(&mut c, axis, act)
        }
        B::Pack => array::pack(&mut c, options),
        B::Split | B::SplitV | B::Unpack => array::split(&mut c, code.builtin, options),
        B::Slice => array::slice(&mut c),
        B::StridedSlice => array::strided_slice(&mut c, options),
        B::Mean | B::Sum | B::ReduceMax | B::ReduceMin | B::ReduceProd => {
            let op = match code.builtin {
                B::Mean => ReduceOp::Mean,
                B::Sum => ReduceOp::Sum,
                B::ReduceMax => ReduceOp::Max,
                B::ReduceMin => ReduceOp::Min,
                _ => ReduceOp::Prod,
            };
            nn::reduce(&mut c, op, options)
        }
        B::Quantize | B::Dequantize => {
            // The float view of the input (a Dequantize when it is int8, the widened constant when
            // FLOAT16), bound to the output: through a Quantize when the output is int8.
            let x = c.float_in(0)?;
            c.finish(x)
        }
        B::ResizeBilinear | B::ResizeNearestNeighbor => array::resize(&mut c, options),
        B::Transpose => {
            let x = c.float_in(0)?;
            let perm = c.axes(1, c.rank(x), "perm")?;
            let y = c.node(Op::Transpose { perm }, vec![x])?;
            c.finish(y)
        }
        B::Gather => array::gather(&mut c, options),
        B::UnidirectionalSequenceLstm => nn::lstm(&mut c, options),
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
        B::BatchMatmul => nn::batch_matmul(&mut c, options),
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

fn positive(v: i32, what: &str) -> R<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| OpError(format!("{what} {v} must be positive")))
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
