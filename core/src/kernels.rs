//! The kernel table: one plain function pointer per op, supplied by a target as a value.
//!
//! A session runs every op through a `&'static Kernels`. `ember-core` provides [`REFERENCE`]; targets
//! (`ember-cpu`, `ember-cortex-m`) export their own tables, usually the reference table with some entries
//! replaced. There is no trait and no type parameter: switching targets is changing a value.

use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::{array, math, nn, pool, quant, In, Out};
use crate::schema::{
    ArgReduceParams, BinaryParams, CastParams, CompareParams, ConcatParams, Conv2dParams,
    ConvTranspose2dParams, DequantizeParams, FullyConnectedParams, GatherParams, LayerNormParams,
    LogicalParams, MatMulParams, OpKind, PadParams, Pool2dParams, QuantAddParams,
    QuantAvgPoolParams, QuantConv2dParams, QuantFullyConnectedParams, QuantMaxPoolParams,
    QuantMulParams, QuantSoftmaxParams, QuantizeParams, ReduceParams, RequantizeParams,
    ResizeParams, SliceParams, SoftmaxParams, TransposeParams, UnaryParams,
};
use crate::workspace::{ScratchFn, Workspace};
use crate::Error;

/// Signature of a 2-D convolution kernel (`x, w, bias, y`, and its [`Workspace`]: `None` means no
/// scratch and one thread).
pub type Conv2dFn =
    fn(&Conv2dParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>, Option<&mut Workspace<'_>>);
/// Signature of a 2-D transposed convolution kernel.
pub type ConvTranspose2dFn =
    fn(&ConvTranspose2dParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>, Option<&mut Workspace<'_>>);
/// Signature of a fully connected kernel.
pub type FullyConnectedFn =
    fn(&FullyConnectedParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>, Option<&mut Workspace<'_>>);
/// Signature of a matrix multiply kernel.
pub type MatMulFn = fn(&MatMulParams, In<'_>, In<'_>, Out<'_>, Option<&mut Workspace<'_>>);
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

/// Signature of an int8 convolution (`x, w, bias, requant, y`, and its [`Workspace`]).
pub type QuantConv2dFn = fn(
    &QuantConv2dParams,
    In<'_, i8>,
    In<'_, i8>,
    Option<&[i32]>,
    &[i32],
    Out<'_, i8>,
    Option<&mut Workspace<'_>>,
);
/// Signature of an int8 fully connected kernel (`x, w, bias, requant, y`, and its [`Workspace`]).
pub type QuantFullyConnectedFn = fn(
    &QuantFullyConnectedParams,
    In<'_, i8>,
    In<'_, i8>,
    Option<&[i32]>,
    &[i32],
    Out<'_, i8>,
    Option<&mut Workspace<'_>>,
);
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

/// Signature of a weight-only int8 fully connected kernel (`x, w, scales, bias, y`, and its
/// [`Workspace`]).
pub type FullyConnectedW8Fn = fn(
    &FullyConnectedParams,
    In<'_>,
    In<'_, i8>,
    &[f32],
    Option<&[f32]>,
    Out<'_>,
    Option<&mut Workspace<'_>>,
);
/// Signature of an embedding lookup (`table, ids, scales, y`); fails on an id outside the table.
pub type EmbeddingFn = fn(AnyIn<'_>, AnyIn<'_>, Option<&[f32]>, Out<'_>) -> Result<(), Error>;

/// Signature of data movement on tensors other than f32 (`kind` is Concat, Transpose, Pad, Reshape,
/// Slice, Gather or Broadcast).
pub type MovementFn = fn(&OpKind, &[AnyIn<'_>], AnyOut<'_>) -> Result<(), Error>;

/// Whether the entry mask `E` has any of `bits`: a constant in each instance, so that the code it guards
/// (an op kind's decoding, validation and dispatch) vanishes from builds that leave those entries out.
#[inline(always)]
pub(crate) const fn has<const E: u64>(bits: u64) -> bool {
    E & bits != 0
}

/// The entries of a kernel table, one bit each, in [`Kernels::entries`]. A session refuses a model that
/// needs an entry its table leaves out, so a table can carry only what its models use (the other entries
/// are stubs the session never calls) and a firmware links only those kernels: see [`Kernels::only`]
/// and [`Model::kernel_entries`](crate::Model::kernel_entries).
pub mod entry {
    /// [`Kernels::movement8`](super::Kernels::movement8).
    pub const MOVEMENT8: u64 = 1 << 0;
    /// [`Kernels::movement16`](super::Kernels::movement16).
    pub const MOVEMENT16: u64 = 1 << 1;
    /// [`Kernels::movement32`](super::Kernels::movement32).
    pub const MOVEMENT32: u64 = 1 << 2;
    /// [`Kernels::movement64`](super::Kernels::movement64).
    pub const MOVEMENT64: u64 = 1 << 3;
    /// [`Kernels::conv2d`](super::Kernels::conv2d).
    pub const CONV2D: u64 = 1 << 4;
    /// [`Kernels::conv_transpose2d`](super::Kernels::conv_transpose2d).
    pub const CONV_TRANSPOSE2D: u64 = 1 << 5;
    /// [`Kernels::fully_connected`](super::Kernels::fully_connected).
    pub const FULLY_CONNECTED: u64 = 1 << 6;
    /// [`Kernels::matmul`](super::Kernels::matmul).
    pub const MATMUL: u64 = 1 << 7;
    /// [`Kernels::binary`](super::Kernels::binary).
    pub const BINARY: u64 = 1 << 8;
    /// [`Kernels::unary`](super::Kernels::unary).
    pub const UNARY: u64 = 1 << 9;
    /// [`Kernels::softmax`](super::Kernels::softmax).
    pub const SOFTMAX: u64 = 1 << 10;
    /// [`Kernels::max_pool`](super::Kernels::max_pool).
    pub const MAX_POOL: u64 = 1 << 11;
    /// [`Kernels::avg_pool`](super::Kernels::avg_pool).
    pub const AVG_POOL: u64 = 1 << 12;
    /// [`Kernels::global_avg_pool`](super::Kernels::global_avg_pool).
    pub const GLOBAL_AVG_POOL: u64 = 1 << 13;
    /// [`Kernels::concat`](super::Kernels::concat).
    pub const CONCAT: u64 = 1 << 14;
    /// [`Kernels::transpose`](super::Kernels::transpose).
    pub const TRANSPOSE: u64 = 1 << 15;
    /// [`Kernels::pad`](super::Kernels::pad).
    pub const PAD: u64 = 1 << 16;
    /// [`Kernels::reshape`](super::Kernels::reshape).
    pub const RESHAPE: u64 = 1 << 17;
    /// [`Kernels::log_softmax`](super::Kernels::log_softmax).
    pub const LOG_SOFTMAX: u64 = 1 << 18;
    /// [`Kernels::reduce`](super::Kernels::reduce).
    pub const REDUCE: u64 = 1 << 19;
    /// [`Kernels::layer_norm`](super::Kernels::layer_norm).
    pub const LAYER_NORM: u64 = 1 << 20;
    /// [`Kernels::slice`](super::Kernels::slice).
    pub const SLICE: u64 = 1 << 21;
    /// [`Kernels::gather`](super::Kernels::gather).
    pub const GATHER: u64 = 1 << 22;
    /// [`Kernels::broadcast`](super::Kernels::broadcast).
    pub const BROADCAST: u64 = 1 << 23;
    /// [`Kernels::resize`](super::Kernels::resize).
    pub const RESIZE: u64 = 1 << 24;
    /// [`Kernels::binary_any`](super::Kernels::binary_any).
    pub const BINARY_ANY: u64 = 1 << 25;
    /// [`Kernels::unary_any`](super::Kernels::unary_any).
    pub const UNARY_ANY: u64 = 1 << 26;
    /// [`Kernels::compare`](super::Kernels::compare).
    pub const COMPARE: u64 = 1 << 27;
    /// [`Kernels::logical`](super::Kernels::logical).
    pub const LOGICAL: u64 = 1 << 28;
    /// [`Kernels::not`](super::Kernels::not).
    pub const NOT: u64 = 1 << 29;
    /// [`Kernels::where_select`](super::Kernels::where_select).
    pub const WHERE_SELECT: u64 = 1 << 30;
    /// [`Kernels::cast`](super::Kernels::cast).
    pub const CAST: u64 = 1 << 31;
    /// [`Kernels::arg_reduce`](super::Kernels::arg_reduce).
    pub const ARG_REDUCE: u64 = 1 << 32;
    /// [`Kernels::quant_conv2d`](super::Kernels::quant_conv2d).
    pub const QUANT_CONV2D: u64 = 1 << 33;
    /// [`Kernels::quant_fully_connected`](super::Kernels::quant_fully_connected).
    pub const QUANT_FULLY_CONNECTED: u64 = 1 << 34;
    /// [`Kernels::quant_add`](super::Kernels::quant_add).
    pub const QUANT_ADD: u64 = 1 << 35;
    /// [`Kernels::quant_mul`](super::Kernels::quant_mul).
    pub const QUANT_MUL: u64 = 1 << 36;
    /// [`Kernels::quant_avg_pool`](super::Kernels::quant_avg_pool).
    pub const QUANT_AVG_POOL: u64 = 1 << 37;
    /// [`Kernels::quant_max_pool`](super::Kernels::quant_max_pool).
    pub const QUANT_MAX_POOL: u64 = 1 << 38;
    /// [`Kernels::quant_softmax`](super::Kernels::quant_softmax).
    pub const QUANT_SOFTMAX: u64 = 1 << 39;
    /// [`Kernels::quantize`](super::Kernels::quantize).
    pub const QUANTIZE: u64 = 1 << 40;
    /// [`Kernels::dequantize`](super::Kernels::dequantize).
    pub const DEQUANTIZE: u64 = 1 << 41;
    /// [`Kernels::requantize`](super::Kernels::requantize).
    pub const REQUANTIZE: u64 = 1 << 42;
    /// [`Kernels::fully_connected_w8`](super::Kernels::fully_connected_w8).
    pub const FULLY_CONNECTED_W8: u64 = 1 << 43;
    /// [`Kernels::embedding`](super::Kernels::embedding).
    pub const EMBEDDING: u64 = 1 << 44;
    /// Every data-movement entry.
    pub const MOVEMENT: u64 = MOVEMENT8 | MOVEMENT16 | MOVEMENT32 | MOVEMENT64;
    /// Not a kernel: sessions of a build with this bit hand their kernels scratch and workers (a
    /// [`Workspace`](crate::Workspace)). Host builds have it ([`family::ALL`](super::family::ALL)); a
    /// firmware's [`Model::parse_only`](crate::Model::parse_only) mask, made of its ops' entries, does
    /// not, so its sessions link none of that code and give kernels an empty workspace.
    pub const WORKSPACE: u64 = 1 << 63;

    /// The name of entry bit `i` (the field of [`Kernels`](super::Kernels)), for reports.
    pub const NAMES: [&str; 45] = [
        "movement8",
        "movement16",
        "movement32",
        "movement64",
        "conv2d",
        "conv_transpose2d",
        "fully_connected",
        "matmul",
        "binary",
        "unary",
        "softmax",
        "max_pool",
        "avg_pool",
        "global_avg_pool",
        "concat",
        "transpose",
        "pad",
        "reshape",
        "log_softmax",
        "reduce",
        "layer_norm",
        "slice",
        "gather",
        "broadcast",
        "resize",
        "binary_any",
        "unary_any",
        "compare",
        "logical",
        "not",
        "where_select",
        "cast",
        "arg_reduce",
        "quant_conv2d",
        "quant_fully_connected",
        "quant_add",
        "quant_mul",
        "quant_avg_pool",
        "quant_max_pool",
        "quant_softmax",
        "quantize",
        "dequantize",
        "requantize",
        "fully_connected_w8",
        "embedding",
    ];

    /// The names of the entries in `mask`, in bit order.
    pub fn names(mask: u64) -> impl Iterator<Item = &'static str> {
        NAMES
            .iter()
            .enumerate()
            .filter(move |(i, _)| mask & (1 << i) != 0)
            .map(|(_, n)| *n)
    }
}

/// Groups of [`entry`] bits: what a table provides as a whole family of ops.
pub mod family {
    use super::entry::*;

    /// Every op on f32 tensors.
    pub const F32: u64 = CONV2D
        | CONV_TRANSPOSE2D
        | FULLY_CONNECTED
        | MATMUL
        | BINARY
        | UNARY
        | SOFTMAX
        | MAX_POOL
        | AVG_POOL
        | GLOBAL_AVG_POOL
        | CONCAT
        | TRANSPOSE
        | PAD
        | RESHAPE
        | LOG_SOFTMAX
        | REDUCE
        | LAYER_NORM
        | SLICE
        | GATHER
        | BROADCAST
        | RESIZE
        | EMBEDDING;
    /// Ops on the other dtypes: integer and f64 arithmetic, comparisons, logic, Where, Cast, ArgMax,
    /// and data movement of any dtype.
    pub const TYPED: u64 = MOVEMENT
        | BINARY_ANY
        | UNARY_ANY
        | COMPARE
        | LOGICAL
        | NOT
        | WHERE_SELECT
        | CAST
        | ARG_REDUCE;
    /// The int8 ops, and data movement of 1-byte tensors.
    pub const INT8: u64 = MOVEMENT8
        | QUANT_CONV2D
        | QUANT_FULLY_CONNECTED
        | QUANT_ADD
        | QUANT_MUL
        | QUANT_AVG_POOL
        | QUANT_MAX_POOL
        | QUANT_SOFTMAX
        | QUANTIZE
        | DEQUANTIZE
        | REQUANTIZE;
    /// Weight-only int8 (`--quantize int8-weights`): f32 activations, int8 weights read in place.
    pub const WEIGHT_INT8: u64 = FULLY_CONNECTED_W8 | EMBEDDING;
    /// All of them.
    pub const ALL: u64 = F32 | TYPED | INT8 | WEIGHT_INT8 | WORKSPACE;
}

/// A target's kernels, one entry per op of the blob's op set, and which entries it provides.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// Name shown by `ember inspect` and in profiles (`"reference"`, `"cpu-avx2"`, ...).
    pub name: &'static str,
    /// The [`entry`] bits this table provides (often a [`family`] mask); the others are stubs a session
    /// never calls.
    pub entries: u64,
    /// Scratch bytes the table's kernels ask for, per op (see [`crate::workspace`]); `None`: none.
    pub scratch: Option<ScratchFn>,
    /// Data movement (Concat, Transpose, Pad, Reshape, Slice, Gather, Broadcast) of tensors other than
    /// f32 with 1-byte elements (int8, uint8, bool).
    pub movement8: MovementFn,
    /// The same with 2-byte elements (int16, uint16, float16).
    pub movement16: MovementFn,
    /// The same with 4-byte elements (int32, uint32).
    pub movement32: MovementFn,
    /// The same with 8-byte elements (int64, uint64, f64).
    pub movement64: MovementFn,
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
    /// FullyConnected with weight-only int8.
    pub fully_connected_w8: FullyConnectedW8Fn,
    /// Embedding lookup (f32 or weight-only int8 table).
    pub embedding: EmbeddingFn,
}

/// The entry that runs `kind` (`all_f32`: every input and the output are f32). Ops on f32 tensors use
/// the f32 entries; int8 ops their own; data movement of other dtypes the `movement` entry of the
/// output's element size (`out_bytes`).
pub fn entry_of(kind: &OpKind, all_f32: bool, out_bytes: usize) -> u64 {
    entry_in::<{ family::ALL }>(kind, all_f32, out_bytes)
}

/// [`entry_of`] for a build with the entries `E` only: 0 for a kind `E` leaves out (validation refuses
/// those first), so the match holds the model's kinds alone.
pub(crate) fn entry_in<const E: u64>(kind: &OpKind, all_f32: bool, out_bytes: usize) -> u64 {
    use entry::*;
    match kind {
        OpKind::Conv2d(_) if has::<E>(CONV2D) => CONV2D,
        OpKind::ConvTranspose2d(_) if has::<E>(CONV_TRANSPOSE2D) => CONV_TRANSPOSE2D,
        OpKind::FullyConnected(_) if has::<E>(FULLY_CONNECTED) => FULLY_CONNECTED,
        OpKind::MatMul(_) if has::<E>(MATMUL) => MATMUL,
        OpKind::Binary(_) if all_f32 && has::<E>(BINARY) => BINARY,
        OpKind::Binary(_) if has::<E>(BINARY_ANY) => BINARY_ANY,
        OpKind::Unary(_) if all_f32 && has::<E>(UNARY) => UNARY,
        OpKind::Unary(_) if has::<E>(UNARY_ANY) => UNARY_ANY,
        OpKind::Softmax(_) if has::<E>(SOFTMAX) => SOFTMAX,
        OpKind::MaxPool2d(_) if has::<E>(MAX_POOL) => MAX_POOL,
        OpKind::AvgPool2d(_) if has::<E>(AVG_POOL) => AVG_POOL,
        OpKind::GlobalAvgPool if has::<E>(GLOBAL_AVG_POOL) => GLOBAL_AVG_POOL,
        OpKind::Concat(_) if all_f32 && has::<E>(CONCAT) => CONCAT,
        OpKind::Transpose(_) if all_f32 && has::<E>(TRANSPOSE) => TRANSPOSE,
        OpKind::Pad(_) if all_f32 && has::<E>(PAD) => PAD,
        OpKind::Reshape if all_f32 && has::<E>(RESHAPE) => RESHAPE,
        OpKind::Slice(_) if all_f32 && has::<E>(SLICE) => SLICE,
        OpKind::Gather(_) if all_f32 && has::<E>(GATHER) => GATHER,
        OpKind::Broadcast if all_f32 && has::<E>(BROADCAST) => BROADCAST,
        OpKind::Concat(_)
        | OpKind::Transpose(_)
        | OpKind::Pad(_)
        | OpKind::Reshape
        | OpKind::Slice(_)
        | OpKind::Gather(_)
        | OpKind::Broadcast
            if has::<E>(MOVEMENT) =>
        {
            match out_bytes {
                1 => MOVEMENT8,
                2 => MOVEMENT16,
                4 => MOVEMENT32,
                _ => MOVEMENT64,
            }
        }
        OpKind::LogSoftmax(_) if has::<E>(LOG_SOFTMAX) => LOG_SOFTMAX,
        OpKind::Reduce(_) if has::<E>(REDUCE) => REDUCE,
        OpKind::LayerNorm(_) if has::<E>(LAYER_NORM) => LAYER_NORM,
        OpKind::Resize(_) if has::<E>(RESIZE) => RESIZE,
        OpKind::Compare(_) if has::<E>(COMPARE) => COMPARE,
        OpKind::Logical(_) if has::<E>(LOGICAL) => LOGICAL,
        OpKind::Not if has::<E>(NOT) => NOT,
        OpKind::Where if has::<E>(WHERE_SELECT) => WHERE_SELECT,
        OpKind::Cast(_) if has::<E>(CAST) => CAST,
        OpKind::ArgReduce(_) if has::<E>(ARG_REDUCE) => ARG_REDUCE,
        OpKind::QuantConv2d(_) if has::<E>(QUANT_CONV2D) => QUANT_CONV2D,
        OpKind::QuantFullyConnected(_) if has::<E>(QUANT_FULLY_CONNECTED) => QUANT_FULLY_CONNECTED,
        OpKind::QuantAdd(_) if has::<E>(QUANT_ADD) => QUANT_ADD,
        OpKind::QuantMul(_) if has::<E>(QUANT_MUL) => QUANT_MUL,
        OpKind::QuantAvgPool2d(_) if has::<E>(QUANT_AVG_POOL) => QUANT_AVG_POOL,
        OpKind::QuantMaxPool2d(_) if has::<E>(QUANT_MAX_POOL) => QUANT_MAX_POOL,
        OpKind::QuantSoftmax(_) if has::<E>(QUANT_SOFTMAX) => QUANT_SOFTMAX,
        OpKind::Quantize(_) if has::<E>(QUANTIZE) => QUANTIZE,
        OpKind::Dequantize(_) if has::<E>(DEQUANTIZE) => DEQUANTIZE,
        OpKind::Requantize(_) if has::<E>(REQUANTIZE) => REQUANTIZE,
        OpKind::FullyConnectedW8(_) if has::<E>(FULLY_CONNECTED_W8) => FULLY_CONNECTED_W8,
        OpKind::Embedding if has::<E>(EMBEDDING) => EMBEDDING,
        _ => 0,
    }
}

impl Kernels {
    /// This table with only the entries in `entries` (and in the table): the others become stubs, so that
    /// a static built with it links only those kernels. Pass a model's
    /// [`Model::kernel_entries`](crate::Model::kernel_entries), which `ember convert --emit rust` and the
    /// firmware examples' build scripts write as a constant:
    ///
    /// ```
    /// use ember_core::kernels::{entry, Kernels};
    /// // A table for a model that only needs int8 convolutions and the f32 <-> int8 edges.
    /// static KERNELS: Kernels = ember_core::REFERENCE
    ///     .only(entry::QUANT_CONV2D | entry::QUANTIZE | entry::DEQUANTIZE);
    /// assert_eq!(KERNELS.entries, entry::QUANT_CONV2D | entry::QUANTIZE | entry::DEQUANTIZE);
    /// ```
    pub const fn only(&self, entries: u64) -> Kernels {
        let keep = self.entries & entries;
        // Each entry: this table's kernel if kept, else the stub of its signature.
        macro_rules! keep_or_stub {
            ($($field:ident => $bit:ident, $stub:ident),* $(,)?) => {
                Kernels {
                    name: self.name,
                    entries: keep,
                    scratch: self.scratch,
                    $($field: if keep & entry::$bit != 0 { self.$field } else { stub::$stub },)*
                }
            };
        }
        keep_or_stub!(
            movement8 => MOVEMENT8, movement,
            movement16 => MOVEMENT16, movement,
            movement32 => MOVEMENT32, movement,
            movement64 => MOVEMENT64, movement,
            conv2d => CONV2D, conv2d,
            conv_transpose2d => CONV_TRANSPOSE2D, conv_transpose2d,
            fully_connected => FULLY_CONNECTED, fully_connected,
            matmul => MATMUL, matmul,
            binary => BINARY, binary,
            unary => UNARY, unary,
            softmax => SOFTMAX, softmax,
            max_pool => MAX_POOL, max_pool,
            avg_pool => AVG_POOL, avg_pool,
            global_avg_pool => GLOBAL_AVG_POOL, global_avg_pool,
            concat => CONCAT, concat,
            transpose => TRANSPOSE, transpose,
            pad => PAD, pad,
            reshape => RESHAPE, reshape,
            log_softmax => LOG_SOFTMAX, log_softmax,
            reduce => REDUCE, reduce,
            layer_norm => LAYER_NORM, layer_norm,
            slice => SLICE, slice,
            gather => GATHER, gather,
            broadcast => BROADCAST, broadcast,
            resize => RESIZE, resize,
            binary_any => BINARY_ANY, binary_any,
            unary_any => UNARY_ANY, unary_any,
            compare => COMPARE, compare,
            logical => LOGICAL, logical,
            not => NOT, not,
            where_select => WHERE_SELECT, where_select,
            cast => CAST, cast,
            arg_reduce => ARG_REDUCE, arg_reduce,
            quant_conv2d => QUANT_CONV2D, quant_conv2d,
            quant_fully_connected => QUANT_FULLY_CONNECTED, quant_fully_connected,
            quant_add => QUANT_ADD, quant_add,
            quant_mul => QUANT_MUL, quant_mul,
            quant_avg_pool => QUANT_AVG_POOL, quant_avg_pool,
            quant_max_pool => QUANT_MAX_POOL, quant_max_pool,
            quant_softmax => QUANT_SOFTMAX, quant_softmax,
            quantize => QUANTIZE, quantize,
            dequantize => DEQUANTIZE, dequantize,
            requantize => REQUANTIZE, requantize,
            fully_connected_w8 => FULLY_CONNECTED_W8, fully_connected_w8,
            embedding => EMBEDDING, embedding,
        )
    }
}

/// The portable reference kernels of `ember-core`: plain Rust, no SIMD, no allocation.
pub static REFERENCE: Kernels = Kernels {
    name: "reference",
    entries: family::ALL,
    scratch: None,
    movement8: array::any::movement8,
    movement16: array::any::movement16,
    movement32: array::any::movement32,
    movement64: array::any::movement64,
    conv2d: reference::conv2d,
    conv_transpose2d: reference::conv_transpose2d,
    fully_connected: reference::fully_connected,
    matmul: reference::matmul,
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
    quant_conv2d: reference::quant_conv2d,
    quant_fully_connected: reference::quant_fully_connected,
    quant_add: quant::add::add,
    quant_mul: quant::mul::mul,
    quant_avg_pool: quant::avg_pool::avg_pool,
    quant_max_pool: quant::max_pool::max_pool,
    quant_softmax: quant::softmax::softmax,
    quantize: quant::quantize::quantize,
    dequantize: quant::dequantize::dequantize,
    requantize: quant::requantize::requantize,
    fully_connected_w8: reference::fully_connected_w8,
    embedding: array::embedding::embedding,
};

/// The reference kernels for f32 models only: what a firmware running a float model links (the other
/// families' entries are stubs; a model that needs them is refused when the session opens).
pub static REFERENCE_F32: Kernels = Kernels {
    name: "reference-f32",
    entries: family::F32,
    movement8: stub::movement,
    movement16: stub::movement,
    movement32: stub::movement,
    movement64: stub::movement,
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
    fully_connected_w8: stub::fully_connected_w8,
    ..REFERENCE
};

/// The reference kernels for int8 models (with f32 at their edges): f32 and int8 families.
pub static REFERENCE_INT8: Kernels = Kernels {
    name: "reference-int8",
    entries: family::F32 | family::INT8,
    binary_any: stub::binary_any,
    unary_any: stub::unary_any,
    compare: stub::compare,
    logical: stub::logical,
    not: stub::not,
    where_select: stub::where_select,
    cast: stub::cast,
    arg_reduce: stub::arg_reduce,
    fully_connected_w8: stub::fully_connected_w8,
    embedding: stub::embedding,
    ..REFERENCE
};

/// The reference kernels of the ops that take a [`Workspace`], in the table's signatures: they need
/// no scratch and run on one thread, so they ignore it.
mod reference {
    use super::*;

    type Ws<'a, 'b> = Option<&'a mut Workspace<'b>>;

    pub fn conv2d(p: &Conv2dParams, x: In<'_>, w: In<'_>, b: Option<&[f32]>, y: Out<'_>, _: Ws) {
        nn::conv::conv2d(p, x, w, b, y)
    }
    pub fn conv_transpose2d(
        p: &ConvTranspose2dParams,
        x: In<'_>,
        w: In<'_>,
        b: Option<&[f32]>,
        y: Out<'_>,
        _: Ws,
    ) {
        nn::conv_transpose::conv_transpose2d(p, x, w, b, y)
    }
    pub fn fully_connected(
        p: &FullyConnectedParams,
        x: In<'_>,
        w: In<'_>,
        b: Option<&[f32]>,
        y: Out<'_>,
        _: Ws,
    ) {
        nn::fully_connected::fully_connected(p, x, w, b, y)
    }
    pub fn matmul(p: &MatMulParams, a: In<'_>, b: In<'_>, y: Out<'_>, _: Ws) {
        nn::matmul::matmul(p, a, b, y)
    }
    pub fn quant_conv2d(
        p: &QuantConv2dParams,
        x: In<'_, i8>,
        w: In<'_, i8>,
        b: Option<&[i32]>,
        rq: &[i32],
        y: Out<'_, i8>,
        _: Ws,
    ) {
        quant::conv::conv2d(p, x, w, b, rq, y)
    }
    pub fn quant_fully_connected(
        p: &QuantFullyConnectedParams,
        x: In<'_, i8>,
        w: In<'_, i8>,
        b: Option<&[i32]>,
        rq: &[i32],
        y: Out<'_, i8>,
        _: Ws,
    ) {
        quant::fully_connected::fully_connected(p, x, w, b, rq, y)
    }
    pub fn fully_connected_w8(
        p: &FullyConnectedParams,
        x: In<'_>,
        w: In<'_, i8>,
        scales: &[f32],
        b: Option<&[f32]>,
        y: Out<'_>,
        _: Ws,
    ) {
        nn::fully_connected_w8::fully_connected_w8(p, x, w, scales, b, y)
    }
}

/// Entries a table leaves out. The session never calls them (it refuses such models up front); each does
/// nothing, or reports the op as unsupported where it can.
mod stub {
    use super::*;

    type Ws<'a, 'b> = Option<&'a mut Workspace<'b>>;

    pub fn conv2d(_: &Conv2dParams, _: In<'_>, _: In<'_>, _: Option<&[f32]>, _: Out<'_>, _: Ws) {}
    pub fn conv_transpose2d(
        _: &ConvTranspose2dParams,
        _: In<'_>,
        _: In<'_>,
        _: Option<&[f32]>,
        _: Out<'_>,
        _: Ws,
    ) {
    }
    pub fn fully_connected(
        _: &FullyConnectedParams,
        _: In<'_>,
        _: In<'_>,
        _: Option<&[f32]>,
        _: Out<'_>,
        _: Ws,
    ) {
    }
    pub fn matmul(_: &MatMulParams, _: In<'_>, _: In<'_>, _: Out<'_>, _: Ws) {}
    pub fn binary(_: &BinaryParams, _: In<'_>, _: In<'_>, _: Out<'_>) {}
    pub fn unary(_: &UnaryParams, _: In<'_>, _: Out<'_>) {}
    pub fn softmax(_: &SoftmaxParams, _: In<'_>, _: Out<'_>) {}
    pub fn max_pool(_: &Pool2dParams, _: In<'_>, _: Out<'_>) {}
    pub fn avg_pool(_: &Pool2dParams, _: In<'_>, _: Out<'_>) {}
    pub fn global_avg_pool(_: In<'_>, _: Out<'_>) {}
    pub fn concat(_: &ConcatParams, _: &[In<'_>], _: Out<'_>) {}
    pub fn transpose(_: &TransposeParams, _: In<'_>, _: Out<'_>) {}
    pub fn pad(_: &PadParams, _: In<'_>, _: Out<'_>) {}
    pub fn reshape(_: In<'_>, _: Out<'_>) {}
    pub fn log_softmax(_: &SoftmaxParams, _: In<'_>, _: Out<'_>) {}
    pub fn reduce(_: &ReduceParams, _: In<'_>, _: Out<'_>) {}
    pub fn layer_norm(_: &LayerNormParams, _: In<'_>, _: In<'_>, _: Option<&[f32]>, _: Out<'_>) {}
    pub fn slice(_: &SliceParams, _: In<'_>, _: Out<'_>) {}
    pub fn gather(_: &GatherParams, _: In<'_>, _: In<'_>, _: Out<'_>) {}
    pub fn broadcast(_: In<'_>, _: Out<'_>) {}
    pub fn resize(_: &ResizeParams, _: In<'_>, _: Out<'_>) {}

    /// What the stubs that return a `Result` give (the same value, so that the linker's identical-code
    /// folding keeps one copy of them in a firmware).
    const LEFT_OUT: Error = Error::Unsupported {
        reason: "this kernel table leaves this op out",
    };

    pub fn movement(_: &OpKind, _: &[AnyIn<'_>], _: AnyOut<'_>) -> Result<(), Error> {
        Err(LEFT_OUT)
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
        _: Ws,
    ) {
    }
    pub fn quant_fully_connected(
        _: &QuantFullyConnectedParams,
        _: In<'_, i8>,
        _: In<'_, i8>,
        _: Option<&[i32]>,
        _: &[i32],
        _: Out<'_, i8>,
        _: Ws,
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
    pub fn fully_connected_w8(
        _: &FullyConnectedParams,
        _: In<'_>,
        _: In<'_, i8>,
        _: &[f32],
        _: Option<&[f32]>,
        _: Out<'_>,
        _: Ws,
    ) {
    }
    pub fn embedding(
        _: AnyIn<'_>,
        _: AnyIn<'_>,
        _: Option<&[f32]>,
        _: Out<'_>,
    ) -> Result<(), Error> {
        Err(LEFT_OUT)
    }
}

/// Calls `f` with the scratch `kernels` asks for to run `kind` on these dims (one worker, 16-byte
/// aligned, allocated here): for calling a table's kernel directly, as the kernel test suites do.
#[cfg(feature = "alloc")]
pub fn with_scratch<R>(
    kernels: &Kernels,
    kind: &OpKind,
    inputs: &[&[usize]],
    output: &[usize],
    f: impl FnOnce(Option<&mut Workspace<'_>>) -> R,
) -> R {
    let bytes = kernels.scratch.map_or(0, |f| f(kind, inputs, output, 1));
    let mut buf = crate::AlignedBuf::zeroed(bytes);
    f(Some(&mut Workspace::new(buf.as_mut_bytes(), None)))
}
