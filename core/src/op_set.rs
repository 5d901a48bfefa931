//! The op set, declared once: one row per op kind of the blob, in the order of its tags, with the
//! kernel-table entries that run it. Everything that goes over every op is generated from these rows:
//!
//! - the blob's [`OpKind`](crate::OpKind) enum, its names and arities (`schema/op.rs`);
//! - the decoding of op records, leaving out the kinds a build does not run (`format/decode.rs`);
//! - the kernel table [`Kernels`](crate::Kernels), its [`entry`](crate::kernels::entry) bits and
//!   [`family`](crate::kernels::family) masks, [`Kernels::only`](crate::Kernels::only), the reference
//!   table and the stubs, and which entry runs an op (`kernels.rs`);
//! - the validation of each op, which `Model::parse` and the converter share
//!   ([`validate_op`](crate::model::validate_op)), and the session's dispatch (`kernels.rs`).
//!
//! What is particular to an op lives in its own file under `ops/<family>/`: its kernel, and a unit type
//! per entry (named after the entry, `ops::nn::conv::Conv2d`) that implements
//! [`KernelEntry`](crate::ops::entry::KernelEntry) (signature, reference kernel, stub) and `OpEntry`
//! (its `validate` and its `run`). `docs/adding-an-op.md` walks through adding one.
//!
//! A row reads
//!
//! ```text
//! /// Doc of the OpKind variant.
//! Kind(decoder Params) min..=max { entry ENTRY = bit: family::file::Entry [families] | other... }
//! ```
//!
//! - `Kind(decoder Params)`: the [`OpKind`](crate::OpKind) variant and its parameters (from
//!   [`crate::schema`]: a kind whose parameters have a file of their own names them by their path
//!   there, `nn::layer_norm::LayerNormParams`), decoded by `compact` (`format/compact.rs`: less
//!   flash, for the kinds a microcontroller runs) or `serde`; a kind without parameters is a bare
//!   `Kind`. New kinds go at the end: a variant's position is its tag in the blob.
//! - `min..=max`: how many inputs it takes.
//! - `entry ENTRY = bit: path [families]`: the field of [`Kernels`](crate::Kernels) that runs it, its
//!   [`entry`](crate::kernels::entry) constant and bit (bits are in the masks that `ember convert --emit
//!   rust` writes: never renumber one), the entry's unit type under `crate::ops`, and the
//!   [`family`](crate::kernels::family) masks it belongs to (`F32`, `TYPED`, `INT8`, `WEIGHT_INT8`).
//! - then, for a kind that also runs on other dtypes than f32, what runs it there:
//!   `| entry ENTRY = bit: path [families]` (a second entry, when not all its tensors are f32),
//!   `| movement` (the data-movement entries below, by element size), and `| alias` (a Reshape planned
//!   on its input's bytes runs no kernel, so every build decodes and validates it).
//!
//! The data-movement entries, which run every data-movement kind on tensors other than f32, are
//! listed after the kinds, with the element size each one moves.

/// Calls `$callback! { rows }` with the op set (see the module doc for the rows' grammar). Each
/// consumer is a local `macro_rules!` that matches the rows and expands what it needs of them.
macro_rules! for_each_op {
    ($callback:ident) => {
        $callback! {
            kinds {
                /// Inputs `x, w[, b]`.
                Conv2d(compact Conv2dParams) 2..=3 {
                    conv2d CONV2D = 4: nn::conv::Conv2d [F32]
                }
                /// Inputs `x, w[, b]`.
                FullyConnected(compact FullyConnectedParams) 2..=3 {
                    fully_connected FULLY_CONNECTED = 6: nn::fully_connected::FullyConnected [F32]
                }
                /// Inputs `a, b`.
                MatMul(serde MatMulParams) 2..=2 {
                    matmul MATMUL = 7: nn::matmul::MatMul [F32]
                }
                /// Inputs `a, b`.
                Binary(serde BinaryParams) 2..=2 {
                    binary BINARY = 8: math::binary::Binary [F32]
                    | binary_any BINARY_ANY = 25: math::arith::BinaryAny [TYPED]
                }
                /// Input `x`.
                Unary(serde UnaryParams) 1..=1 {
                    unary UNARY = 9: math::unary::Unary [F32]
                    | unary_any UNARY_ANY = 26: math::arith::UnaryAny [TYPED]
                }
                /// Input `x`.
                Softmax(compact SoftmaxParams) 1..=1 {
                    softmax SOFTMAX = 10: nn::softmax::Softmax [F32]
                }
                /// Input `x`.
                MaxPool2d(compact Pool2dParams) 1..=1 {
                    max_pool MAX_POOL = 11: pool::max_pool::MaxPool [F32]
                }
                /// Input `x`.
                AvgPool2d(compact Pool2dParams) 1..=1 {
                    avg_pool AVG_POOL = 12: pool::avg_pool::AvgPool [F32]
                }
                /// Input `x`.
                GlobalAvgPool 1..=1 {
                    global_avg_pool GLOBAL_AVG_POOL = 13: pool::global_avg_pool::GlobalAvgPool [F32]
                }
                /// Inputs `x0, x1, ...` (at least one).
                Concat(serde ConcatParams) 1..=MAX_OP_INPUTS {
                    concat CONCAT = 14: array::concat::Concat [F32] | movement
                }
                /// Input `x`.
                Transpose(serde TransposeParams) 1..=1 {
                    transpose TRANSPOSE = 15: array::transpose::Transpose [F32] | movement
                }
                /// Input `x`.
                Pad(serde PadParams) 1..=1 {
                    pad PAD = 16: array::pad::Pad [F32] | movement
                }
                /// Input `x`; an alias when input and output share arena bytes.
                Reshape 1..=1 {
                    reshape RESHAPE = 17: array::reshape::Reshape [F32] | movement | alias
                }
                /// Input `x`.
                LogSoftmax(serde SoftmaxParams) 1..=1 {
                    log_softmax LOG_SOFTMAX = 18: nn::softmax::LogSoftmax [F32]
                }
                /// Input `x`.
                Reduce(serde ReduceParams) 1..=1 {
                    reduce REDUCE = 19: nn::reduce::Reduce [F32]
                }
                /// Inputs `x, scale[, bias]`.
                LayerNorm(serde nn::layer_norm::LayerNormParams) 2..=3 {
                    layer_norm LAYER_NORM = 20: nn::layer_norm::LayerNorm [F32]
                }
                /// Input `x`.
                Slice(serde SliceParams) 1..=1 {
                    slice SLICE = 21: array::slice::Slice [F32] | movement
                }
                /// Inputs `x, indices` (indices: a weight tensor of whole f32 values inside the axis).
                Gather(serde GatherParams) 2..=2 {
                    gather GATHER = 22: array::gather::Gather [F32] | movement
                }
                /// Input `x`, repeated along its size-1 axes.
                Broadcast 1..=1 {
                    broadcast BROADCAST = 23: array::broadcast::Broadcast [F32] | movement
                }
                /// Input `x`; resizes the last two axes.
                Resize(serde ResizeParams) 1..=1 {
                    resize RESIZE = 24: array::resize::Resize [F32]
                }
                /// Inputs `a, b` (one dtype); output Bool.
                Compare(serde CompareParams) 2..=2 {
                    compare COMPARE = 27: math::compare::Compare [TYPED]
                }
                /// Inputs `a, b` (Bool); output Bool.
                Logical(serde LogicalParams) 2..=2 {
                    logical LOGICAL = 28: math::logical::Logical [TYPED]
                }
                /// Input `x` (Bool); output Bool.
                Not 1..=1 {
                    not NOT = 29: math::logical::Not [TYPED]
                }
                /// Inputs `cond` (Bool), `a, b` (the output's dtype).
                Where 3..=3 {
                    where_select WHERE_SELECT = 30: math::where_op::WhereSelect [TYPED]
                }
                /// Input `x`; output of dtype `to`.
                Cast(serde CastParams) 1..=1 {
                    cast CAST = 31: math::cast::Cast [TYPED]
                }
                /// Input `x`; output I64 (ArgMax / ArgMin).
                ArgReduce(serde ArgReduceParams) 1..=1 {
                    arg_reduce ARG_REDUCE = 32: nn::arg_reduce::ArgReduce [TYPED]
                }
                /// Inputs `x, w[, b]`.
                ConvTranspose2d(serde ConvTranspose2dParams) 2..=3 {
                    conv_transpose2d CONV_TRANSPOSE2D = 5: nn::conv_transpose::ConvTranspose2d [F32]
                }
                /// int8 convolution; inputs `x` (I8), `w` (I8, OHWI), `requant` (I32 `[OC, 2]` or `[1, 2]`
                /// multiplier and shift rows)`[, b]` (I32 `[OC]`).
                QuantConv2d(compact QuantConv2dParams) 3..=4 {
                    quant_conv2d QUANT_CONV2D = 33: quant::conv::QuantConv2d [INT8]
                }
                /// int8 fully connected; inputs as [`OpKind::QuantConv2d`] with `w` `[OUT, IN]`.
                QuantFullyConnected(compact QuantFullyConnectedParams) 3..=4 {
                    quant_fully_connected QUANT_FULLY_CONNECTED = 34:
                        quant::fully_connected::QuantFullyConnected [INT8]
                }
                /// int8 broadcasting add; inputs `a, b` (I8).
                QuantAdd(serde QuantAddParams) 2..=2 {
                    quant_add QUANT_ADD = 35: quant::add::QuantAdd [INT8]
                }
                /// int8 broadcasting multiply; inputs `a, b` (I8).
                QuantMul(serde QuantMulParams) 2..=2 {
                    quant_mul QUANT_MUL = 36: quant::mul::QuantMul [INT8]
                }
                /// int8 average pooling; input `x` (I8).
                QuantAvgPool2d(compact QuantAvgPoolParams) 1..=1 {
                    quant_avg_pool QUANT_AVG_POOL = 37: quant::avg_pool::QuantAvgPool [INT8]
                }
                /// int8 max pooling; input `x` (I8).
                QuantMaxPool2d(compact QuantMaxPoolParams) 1..=1 {
                    quant_max_pool QUANT_MAX_POOL = 38: quant::max_pool::QuantMaxPool [INT8]
                }
                /// int8 softmax (output scale 1/256, zero point -128); input `x` (I8).
                QuantSoftmax(compact QuantSoftmaxParams) 1..=1 {
                    quant_softmax QUANT_SOFTMAX = 39: quant::softmax::QuantSoftmax [INT8]
                }
                /// f32 to int8; input `x` (F32).
                Quantize(compact QuantizeParams) 1..=1 {
                    quantize QUANTIZE = 40: quant::quantize::Quantize [INT8]
                }
                /// int8 to f32; input `x` (I8).
                Dequantize(compact DequantizeParams) 1..=1 {
                    dequantize DEQUANTIZE = 41: quant::dequantize::Dequantize [INT8]
                }
                /// int8 to int8 with another scale and zero point; input `x` (I8).
                Requantize(serde RequantizeParams) 1..=1 {
                    requantize REQUANTIZE = 42: quant::requantize::Requantize [INT8]
                }
                /// Fully connected with weight-only int8 (f32 activations); inputs `x` (F32), `w` (I8
                /// `[OUT, IN]`), `scales` (F32 `[OUT]`)`[, b]` (F32 `[OUT]`); output F32.
                FullyConnectedW8(compact FullyConnectedParams) 3..=4 {
                    fully_connected_w8 FULLY_CONNECTED_W8 = 43:
                        nn::fully_connected_w8::FullyConnectedW8 [WEIGHT_INT8]
                }
                /// Embedding lookup by run-time ids; inputs `table` (F32, or I8 with `scales`), `ids` (I32 or
                /// I64)`[, scales]` (F32 `[ROWS]`); output F32.
                Embedding 2..=3 {
                    embedding EMBEDDING = 44: array::embedding::Embedding [F32, WEIGHT_INT8]
                }
                /// Inputs `x, scale`.
                RmsNorm(serde nn::rms_norm::RmsNormParams) 2..=2 {
                    rms_norm RMS_NORM = 45: nn::rms_norm::RmsNorm [F32]
                }
                /// Input `x`.
                Hardmax(serde SoftmaxParams) 1..=1 {
                    hardmax HARDMAX = 46: nn::hardmax::Hardmax [F32]
                }
                /// Input `x` (any dtype).
                Trilu(serde array::trilu::TriluParams) 1..=1 {
                    trilu TRILU = 47: array::trilu::Trilu [F32, TYPED]
                }
                /// Input `x` (f32, f64 or an integer type).
                CumSum(serde math::cumsum::CumSumParams) 1..=1 {
                    cumsum CUMSUM = 48: math::cumsum::CumSum [F32, TYPED]
                }
                /// Inputs `x, w, r[, b[, h0[, c0[, p]]]]`; output `[seq + 2, dirs, batch, hidden]`
                /// (`Y`, then `Y_h` and `Y_c`).
                Rnn(serde nn::rnn::RnnParams) 3..=7 {
                    rnn RNN = 49: nn::rnn::Rnn [F32]
                }
                /// ONNX `GatherElements` (inputs `data, indices`) or `ScatterElements` (`data, indices,
                /// updates`), by mode; indices I32 or I64, checked at run time.
                GatherScatterElements(serde array::gather_scatter::GatherScatterElementsParams) 2..=3 {
                    gather_scatter_elements GATHER_SCATTER_ELEMENTS = 50:
                        array::gather_scatter_elements::GatherScatterElements [F32, TYPED]
                }
                /// ONNX `GatherND` (inputs `data, indices`) or `ScatterND` (`data, indices, updates`), by
                /// mode; indices I32 or I64, checked at run time.
                GatherScatterNd(serde array::gather_scatter::GatherScatterNdParams) 2..=3 {
                    gather_scatter_nd GATHER_SCATTER_ND = 51:
                        array::gather_scatter_nd::GatherScatterNd [F32, TYPED]
                }
                /// ONNX `TopK`'s values (input's dtype) or indices (I64), by [`TopKOutput`](crate::schema::nn::top_k::TopKOutput); input `x`.
                TopK(serde nn::top_k::TopKParams) 1..=1 {
                    top_k TOP_K = 52: nn::top_k::TopK [F32, TYPED]
                }
                /// ONNX `NonZero`: input `x` (any dtype); output I64 `[rank, max]`, -1 past the count.
                NonZero(serde array::non_zero::NonZeroParams) 1..=1 {
                    non_zero NON_ZERO = 53: array::non_zero::NonZero [F32, TYPED]
                }
                /// ONNX `NonMaxSuppression`: inputs `boxes` (F32 `[B, N, 4]`), `scores` (F32
                /// `[B, C, N]`); output I64 `[max, 3]`, -1 past the count.
                NonMaxSuppression(serde nn::non_max_suppression::NmsParams) 2..=2 {
                    non_max_suppression NON_MAX_SUPPRESSION = 54:
                        nn::non_max_suppression::NonMaxSuppression [F32, TYPED]
                }
                /// int8 element-wise function by lookup; inputs `x` (I8), `table` (I8 `[256]`, a weight:
                /// `y = table[x + 128]`).
                QuantLut 2..=2 {
                    quant_lut QUANT_LUT = 55: quant::lut::QuantLut [INT8]
                }
                /// ONNX `DFT` or `STFT` (by `frame_step`): inputs `x` (F32 `[..., 1 or 2]`)`[, window]` (F32
                /// `[length]`, an STFT's); output F32 `[..., 2]`.
                Dft(serde math::dft::DftParams) 1..=2 {
                    dft DFT = 56: math::dft::Dft [F32]
                }
                /// Control flow (`Loop`, `Scan`, `If`), by [`ControlOp`](crate::schema::control::ControlOp):
                /// a loop's head and end, a selection, a scan's slice, a branch; inputs by the step.
                Control(serde control::ControlOp) 0..=3 {
                    control CONTROL = 57: control::Control [F32, TYPED, INT8]
                }
            }
            movement {
                movement8 MOVEMENT8 = 0: array::any::Movement8 [TYPED, INT8] moves 1 byte;
                movement16 MOVEMENT16 = 1: array::any::Movement16 [TYPED] moves 2 bytes;
                movement32 MOVEMENT32 = 2: array::any::Movement32 [TYPED] moves 4 bytes;
                movement64 MOVEMENT64 = 3: array::any::Movement64 [TYPED] moves 8 bytes;
            }
        }
    };
}
pub(crate) use for_each_op;

/// In a consumer's pattern, the binding of a kind's parameters: `OpKind::Conv2d(params_binding!(compact
/// p))` (only expanded for kinds with parameters).
macro_rules! params_binding {
    ($decoder:ident $p:ident) => {
        $p
    };
}
pub(crate) use params_binding;

/// In a consumer's expression, a kind's parameters as its entry takes them: the binding `p` of
/// [`params_binding!`], or `&()` for a kind without parameters (`params!(p $($decoder)?)`).
macro_rules! params {
    ($p:ident) => {
        &()
    };
    ($p:ident $decoder:ident) => {
        $p
    };
}
pub(crate) use params;

/// Whether the other alternatives of a row (the idents after its entry: another entry's field,
/// `movement`, `alias`) include `name`.
pub(crate) const fn has_alternative(alternatives: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < alternatives.len() {
        if str_eq(alternatives[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

/// `a == b`, in a constant.
pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
