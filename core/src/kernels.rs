//! The kernel table: one plain function pointer per op, supplied by a target as a value.
//!
//! A session runs every op through a `&'static Kernels`. `ember-core` provides [`REFERENCE`]; targets
//! (`ember-cpu`, `ember-cortex-m`) export their own tables, usually the reference table with some entries
//! replaced. There is no trait and no type parameter: switching targets is changing a value.

use crate::ops::array::{concat::ConcatParams, pad::PadParams, transpose::TransposeParams};
use crate::ops::math::{binary::BinaryParams, unary::UnaryParams};
use crate::ops::nn::{
    conv::Conv2dParams, fully_connected::FullyConnectedParams, matmul::MatMulParams,
    softmax::SoftmaxParams,
};
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
/// Signature of a reshape copy.
pub type ReshapeFn = fn(In<'_>, Out<'_>);

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
    /// Add, Sub, Mul, Div.
    pub binary: BinaryFn,
    /// Relu, Relu6, Clip, Sigmoid, Tanh.
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
};
