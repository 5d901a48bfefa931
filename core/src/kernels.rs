//! The kernel table: one plain function pointer per op, supplied by a target as a value.
//!
//! A session runs every op through a `&'static Kernels`. `ember-core` provides [`REFERENCE`]; targets
//! (`ember-cpu`, `ember-cortex-m`) export their own tables, usually the reference table with some entries
//! replaced. There is no trait and no type parameter: switching targets is changing a value.

use crate::op::OpKind;
use crate::ops::array::{concat::ConcatParams, pad::PadParams, transpose::TransposeParams};
use crate::ops::array::{gather::GatherParams, resize::ResizeParams, slice::SliceParams};
use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::math::{binary::BinaryParams, unary::UnaryParams};
use crate::ops::math::{cast::CastParams, compare::CompareParams, logical::LogicalParams};
use crate::ops::nn::arg_reduce::ArgReduceParams;
use crate::ops::nn::conv_transpose::ConvTranspose2dParams;
use crate::ops::nn::{
    conv::Conv2dParams, fully_connected::FullyConnectedParams, matmul::MatMulParams,
    softmax::SoftmaxParams,
};
use crate::ops::nn::{layer_norm::LayerNormParams, reduce::ReduceParams};
use crate::ops::pool::Pool2dParams;
use crate::ops::quant::{
    self, add::QuantAddParams, avg_pool::QuantAvgPoolParams, conv::QuantConv2dParams,
    dequantize::DequantizeParams, fully_connected::QuantFullyConnectedParams,
    max_pool::QuantMaxPoolParams, mul::QuantMulParams, quantize::QuantizeParams,
    requantize::RequantizeParams, softmax::QuantSoftmaxParams,
};
use crate::ops::{array, math, nn, pool, In, Out};
use crate::Error;

/// Signature of a 2-D convolution kernel.
pub type Conv2dFn = fn(&Conv2dParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>);
/// Signature of a 2-D transposed convolution kernel.
pub type ConvTranspose2dFn = fn(&ConvTranspose2dParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>);
/// Signature of a fully connected kernel.
pub type FullyConnectedFn = fn(&FullyConnectedParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>);
/// Signature of a matrix multiply kernel.
pub type MatMulFn = fn(&MatMulParams, In<'_>, In<'_>, Out<'_>);
/// Signature of a broadcasting binary kernel.
pub type BinaryFn = fn(&BinaryParams, In<'_>, In<'_>, Out<'_>);
/// Signature of an element-wise unary kernel.
pub type UnaryFn = fn(&UnaryParams, In<'_>, Out<'_>);
/// Signature of a softmax kernel.
pub type SoftmaxFn = fn(&SoftmaxParams, In<'_>, Out<'_>);
/// Signature of a windowed pooling kernel.
pub type Pool2dFn = fn(&Pool2dParams, In<'_>, Out<'_>);
/// Signature of a global pooling kernel.
pub type GlobalPoolFn = fn(In<'_>, Out<'_>);
/// Signature of a concatenation kernel.
pub type ConcatFn = fn(&ConcatParams, &[In<'_>], Out<'_>);
/// Signature of a transpose kernel.
pub type TransposeFn = fn(&TransposeParams, In<'_>, Out<'_>);
/// Signature of a pad kernel.
pub type PadFn = fn(&PadParams, In<'_>, Out<'_>);
/// Signature of a strided slice kernel.
pub type SliceFn = fn(&SliceParams, In<'_>, Out<'_>);
/// Signature of a gather kernel (`x, indices`).
pub type GatherFn = fn(&GatherParams, In<'_>, In<'_>, Out<'_>);
/// Signature of a broadcast copy.
pub type BroadcastFn = fn(In<'_>, Out<'_>);
/// Signature of a resize kernel.
pub type ResizeFn = fn(&ResizeParams, In<'_>, Out<'_>);
/// Signature of a reshape copy.
pub type ReshapeFn = fn(In<'_>, Out<'_>);
/// Signature of a reduction kernel.
pub type ReduceFn = fn(&ReduceParams, In<'_>, Out<'_>);
/// Signature of a layer normalization kernel (`x, scale, bias`).
pub type LayerNormFn = fn(&LayerNormParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>);

/// Signature of a binary op on integer or f64 tensors.
pub type AnyBinaryFn = fn(&BinaryParams, AnyIn<'_>, AnyIn<'_>, AnyOut<'_>);
/// Signature of a unary op on integer or f64 tensors.
pub type AnyUnaryFn = fn(&UnaryParams, AnyIn<'_>, AnyOut<'_>);
/// Signature of a comparison (any dtype in, Bool out).
pub type CompareFn = fn(&CompareParams, AnyIn<'_>, AnyIn<'_>, AnyOut<'_>);
/// Signature of a binary logical op on Bool tensors.
pub type LogicalFn = fn(&LogicalParams, In<'_, u8>, In<'_, u8>, Out<'_, u8>);
/// Signature of logical Not.
pub type NotFn = fn(In<'_, u8>, Out<'_, u8>);
/// Signature of `Where` (`cond, a, b`).
pub type WhereFn = fn(AnyIn<'_>, AnyIn<'_>, AnyIn<'_>, AnyOut<'_>);
/// Signature of a cast.
pub type CastFn = fn(&CastParams, AnyIn<'_>, AnyOut<'_>);
/// Signature of ArgMax / ArgMin.
pub type ArgReduceFn = fn(&ArgReduceParams, AnyIn<'_>, Out<'_, i64>);

/// Signature of an int8 convolution (`x, w, bias, requant, y`).
pub type QuantConv2dFn =
    fn(&QuantConv2dParams, In<'_, i8>, In<'_, i8>, Option<&[i32]>, &[i32], Out<'_, i8>);
/// Signature of an int8 fully connected kernel (`x, w, bias, requant, y`).
pub type QuantFullyConnectedFn =
    fn(&QuantFullyConnectedParams, In<'_, i8>, In<'_, i8>, Option<&[i32]>, &[i32], Out<'_, i8>);
/// Signature of an int8 add.
pub type QuantAddFn = fn(&QuantAddParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 multiply.
pub type QuantMulFn = fn(&QuantMulParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 average pool.
pub type QuantAvgPoolFn = fn(&QuantAvgPoolParams, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 max pool.
pub type QuantMaxPoolFn = fn(&QuantMaxPoolParams, In<'_, i8>, Out<'_, i8>);
/// Signature of an int8 softmax.
pub type QuantSoftmaxFn = fn(&QuantSoftmaxParams, In<'_, i8>, Out<'_, i8>);
/// Signature of a quantize kernel.
pub type QuantizeFn = fn(&QuantizeParams, In<'_>, Out<'_, i8>);
/// Signature of a dequantize kernel.
pub type DequantizeFn = fn(&DequantizeParams, In<'_, i8>, Out<'_>);
/// Signature of a requantize kernel.
pub type RequantizeFn = fn(&RequantizeParams, In<'_, i8>, Out<'_, i8>);

/// Signature of data movement on tensors other than f32 (`kind` is Concat, Transpose, Pad, Reshape,
/// Slice, Gather or Broadcast).
pub type MovementFn = fn(&OpKind, &[AnyIn<'_>], AnyOut<'_>) -> Result<(), Error>;

/// The kernel families a table provides, as bits of [`Kernels::families`]. A session refuses a model
/// with an op whose family its table lacks, so a table can leave families out (their entries are
/// stubs the session never calls) and a firmware links only the kernels it can run.
pub mod family {
    /// Every op on f32 tensors.
    pub const F32: u8 = 1;
    /// Ops on the other dtypes: integer and f64 arithmetic, comparisons, logic, Where, Cast, ArgMax,
    /// and data movement of any dtype.
    pub const TYPED: u8 = 2;
    /// The int8 ops (and data movement of int8 tensors).
    pub const INT8: u8 = 4;
    /// All of them.
    pub const ALL: u8 = F32 | TYPED | INT8;
}

/// A target's kernels, one entry per op of the blob's op set, and the families of ops it runs.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// Name shown by `ember inspect` and in profiles (`"reference"`, `"cpu-avx2"`, ...).
    pub name: &'static str,
    /// Which [`family`] bits this table provides; entries of the others are never called.
    pub families: u8,
    /// Data movement on tensors other than f32 (families TYPED and INT8).
    pub movement_any: MovementFn,
    /// Conv2d (including depthwise, via groups).
    pub conv2d: Conv2dFn,
    /// ConvTranspose2d.
    pub conv_transpose2d: ConvTranspose2dFn,
    /// FullyConnected.
    pub fully_connected: FullyConnectedFn,
    /// MatMul.
    pub matmul: MatMulFn,
    /// Broadcasting binary ops (`BinaryOp`: Add, Sub, Mul, Div, Pow, Min, Max, PRelu, Mod).
    pub binary: BinaryFn,
    /// Element-wise unary ops (`UnaryOp`: activations, rounding, elementary functions).
    pub unary: UnaryFn,
    /// Softmax.
    pub softmax: SoftmaxFn,
    /// MaxPool2d.
    pub max_pool: Pool2dFn,
    /// AvgPool2d.
    pub avg_pool: Pool2dFn,
    /// GlobalAvgPool.
    pub global_avg_pool: GlobalPoolFn,
    /// Concat.
    pub concat: ConcatFn,
    /// Transpose.
    pub transpose: TransposeFn,
    /// Pad.
    pub pad: PadFn,
    /// Reshape when not aliased.
    pub reshape: ReshapeFn,
    /// LogSoftmax.
    pub log_softmax: SoftmaxFn,
    /// Reduce (Sum, Mean, Max, Min, Prod, L1, L2, LogSumExp, SumSquare).
    pub reduce: ReduceFn,
    /// LayerNorm.
    pub layer_norm: LayerNormFn,
    /// Slice.
    pub slice: SliceFn,
    /// Gather.
    pub gather: GatherFn,
    /// Broadcast (Expand, Tile).
    pub broadcast: BroadcastFn,
    /// Resize (nearest, bilinear).
    pub resize: ResizeFn,
    /// Binary ops on integer and f64 tensors.
    pub binary_any: AnyBinaryFn,
    /// Unary ops on integer and f64 tensors.
    pub unary_any: AnyUnaryFn,
    /// Comparisons.
    pub compare: CompareFn,
    /// And, Or, Xor.
    pub logical: LogicalFn,
    /// Not.
    pub not: NotFn,
    /// Where.
    pub where_select: WhereFn,
    /// Cast.
    pub cast: CastFn,
    /// ArgMax / ArgMin.
    pub arg_reduce: ArgReduceFn,
    /// int8 Conv2d (including depthwise).
    pub quant_conv2d: QuantConv2dFn,
    /// int8 FullyConnected.
    pub quant_fully_connected: QuantFullyConnectedFn,
    /// int8 Add.
    pub quant_add: QuantAddFn,
    /// int8 Mul.
    pub quant_mul: QuantMulFn,
    /// int8 AvgPool2d.
    pub quant_avg_pool: QuantAvgPoolFn,
    /// int8 MaxPool2d.
    pub quant_max_pool: QuantMaxPoolFn,
    /// int8 Softmax.
    pub quant_softmax: QuantSoftmaxFn,
    /// Quantize (f32 to int8).
    pub quantize: QuantizeFn,
    /// Dequantize (int8 to f32).
    pub dequantize: DequantizeFn,
    /// Requantize (int8 to int8).
    pub requantize: RequantizeFn,
}

/// The portable reference kernels of `ember-core`: plain Rust, no SIMD, no allocation.
pub static REFERENCE: Kernels = Kernels {
    name: "reference",
    families: family::ALL,
    movement_any: array::any::movement,
    conv2d: nn::conv::conv2d,
    conv_transpose2d: nn::conv_transpose::conv_transpose2d,
    fully_connected: nn::fully_connected::fully_connected,
    matmul: nn::matmul::matmul,
    binary: math::binary::binary,
    unary: math::unary::unary,
    softmax: nn::softmax::softmax,
    max_pool: pool::max_pool::max_pool,
    avg_pool: pool::avg_pool::avg_pool,
    global_avg_pool: pool::global_avg_pool::global_avg_pool,
    concat: array::concat::concat,
    transpose: array::transpose::transpose,
    pad: array::pad::pad,
    reshape: array::reshape::reshape,
    log_softmax: nn::softmax::log_softmax,
    reduce: nn::reduce::reduce,
    layer_norm: nn::layer_norm::layer_norm,

    slice: array::slice::slice,
    gather: array::gather::gather,
    broadcast: array::broadcast::broadcast,
    resize: array::resize::resize,
    binary_any: math::arith::binary,
    unary_any: math::arith::unary,
    compare: math::compare::compare,
    logical: math::logical::logical,
    not: math::logical::not,
    where_select: math::where_op::where_select,
    cast: math::cast::cast,
    arg_reduce: nn::arg_reduce::arg_reduce,
    quant_conv2d: quant::conv::conv2d,
    quant_fully_connected: quant::fully_connected::fully_connected,
    quant_add: quant::add::add,
    quant_mul: quant::mul::mul,
    quant_avg_pool: quant::avg_pool::avg_pool,
    quant_max_pool: quant::max_pool::max_pool,
    quant_softmax: quant::softmax::softmax,
    quantize: quant::quantize::quantize,
    dequantize: quant::dequantize::dequantize,
    requantize: quant::requantize::requantize,
};

/// The reference kernels for f32 models only: what a firmware running a float model links (the other
/// families' entries are stubs; a model that needs them is refused when the session opens).
pub static REFERENCE_F32: Kernels = Kernels {
    name: "reference-f32",
    families: family::F32,
    movement_any: stub::movement,
    binary_any: stub::binary_any,
    unary_any: stub::unary_any,
    compare: stub::compare,
    logical: stub::logical,
    not: stub::not,
    where_select: stub::where_select,
    cast: stub::cast,
    arg_reduce: stub::arg_reduce,
    quant_conv2d: stub::quant_conv2d,
    quant_fully_connected: stub::quant_fully_connected,
    quant_add: stub::quant_add,
    quant_mul: stub::quant_mul,
    quant_avg_pool: stub::quant_avg_pool,
    quant_max_pool: stub::quant_max_pool,
    quant_softmax: stub::quant_softmax,
    quantize: stub::quantize,
    dequantize: stub::dequantize,
    requantize: stub::requantize,
    ..REFERENCE
};

/// The reference kernels for int8 models (with f32 at their edges): f32 and int8 families.
pub static REFERENCE_INT8: Kernels = Kernels {
    name: "reference-int8",
    families: family::F32 | family::INT8,
    binary_any: stub::binary_any,
    unary_any: stub::unary_any,
    compare: stub::compare,
    logical: stub::logical,
    not: stub::not,
    where_select: stub::where_select,
    cast: stub::cast,
    arg_reduce: stub::arg_reduce,
    ..REFERENCE
};

/// Entries for the families a table leaves out. The session never calls them (it refuses such models
/// up front); each does nothing, or reports the op as unsupported where it can.
mod stub {
    use super::*;

    pub fn movement(_: &OpKind, _: &[AnyIn<'_>], _: AnyOut<'_>) -> Result<(), Error> {
        Err(Error::Unsupported {
            reason: "this kernel table has no data movement for this dtype",
        })
    }
    pub fn binary_any(_: &BinaryParams, _: AnyIn<'_>, _: AnyIn<'_>, _: AnyOut<'_>) {}
    pub fn unary_any(_: &UnaryParams, _: AnyIn<'_>, _: AnyOut<'_>) {}
    pub fn compare(_: &CompareParams, _: AnyIn<'_>, _: AnyIn<'_>, _: AnyOut<'_>) {}
    pub fn logical(_: &LogicalParams, _: In<'_, u8>, _: In<'_, u8>, _: Out<'_, u8>) {}
    pub fn not(_: In<'_, u8>, _: Out<'_, u8>) {}
    pub fn where_select(_: AnyIn<'_>, _: AnyIn<'_>, _: AnyIn<'_>, _: AnyOut<'_>) {}
    pub fn cast(_: &CastParams, _: AnyIn<'_>, _: AnyOut<'_>) {}
    pub fn arg_reduce(_: &ArgReduceParams, _: AnyIn<'_>, _: Out<'_, i64>) {}
    pub fn quant_conv2d(
        _: &QuantConv2dParams,
        _: In<'_, i8>,
        _: In<'_, i8>,
        _: Option<&[i32]>,
        _: &[i32],
        _: Out<'_, i8>,
    ) {
    }
    pub fn quant_fully_connected(
        _: &QuantFullyConnectedParams,
        _: In<'_, i8>,
        _: In<'_, i8>,
        _: Option<&[i32]>,
        _: &[i32],
        _: Out<'_, i8>,
    ) {
    }
    pub fn quant_add(_: &QuantAddParams, _: In<'_, i8>, _: In<'_, i8>, _: Out<'_, i8>) {}
    pub fn quant_mul(_: &QuantMulParams, _: In<'_, i8>, _: In<'_, i8>, _: Out<'_, i8>) {}
    pub fn quant_avg_pool(_: &QuantAvgPoolParams, _: In<'_, i8>, _: Out<'_, i8>) {}
    pub fn quant_max_pool(_: &QuantMaxPoolParams, _: In<'_, i8>, _: Out<'_, i8>) {}
    pub fn quant_softmax(_: &QuantSoftmaxParams, _: In<'_, i8>, _: Out<'_, i8>) {}
    pub fn quantize(_: &QuantizeParams, _: In<'_>, _: Out<'_, i8>) {}
    pub fn dequantize(_: &DequantizeParams, _: In<'_, i8>, _: Out<'_>) {}
    pub fn requantize(_: &RequantizeParams, _: In<'_, i8>, _: Out<'_, i8>) {}
}
