//! The kernel table: one plain function pointer per op, supplied by a target as a value.
//!
//! A session runs every op through a `&'static Kernels`. `ember-core` provides [`REFERENCE`]; targets
//! (`ember-cpu`, `ember-cortex-m`) export their own tables, usually the reference table with some entries
//! replaced. There is no trait and no type parameter: switching targets is changing a value.

use crate::ops::array::{concat::ConcatParams, pad::PadParams, transpose::TransposeParams};
use crate::ops::array::{gather::GatherParams, resize::ResizeParams, slice::SliceParams};
use crate::ops::math::{binary::BinaryParams, unary::UnaryParams};
use crate::ops::nn::{
    conv::Conv2dParams, fully_connected::FullyConnectedParams, matmul::MatMulParams,
    softmax::SoftmaxParams,
};
use crate::ops::nn::{layer_norm::LayerNormParams, reduce::ReduceParams};
use crate::ops::pool::Pool2dParams;
use crate::ops::{array, math, nn, pool, In, Out};

/// Signature of a 2-D convolution kernel.
pub type Conv2dFn = fn(&Conv2dParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>);
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

/// A target's kernels, one entry per op of the blob's op set.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// Name shown by `ember inspect` and in profiles (`"reference"`, `"cpu-avx2"`, ...).
    pub name: &'static str,
    /// Conv2d (including depthwise, via groups).
    pub conv2d: Conv2dFn,
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
}

/// The portable reference kernels of `ember-core`: plain Rust, no SIMD, no allocation.
pub static REFERENCE: Kernels = Kernels {
    name: "reference",
    conv2d: nn::conv::conv2d,
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
};
