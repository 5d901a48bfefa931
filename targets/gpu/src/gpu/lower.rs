//! Lowering: each op of the blob becomes a list of kernel launches with everything resolved on the host
//! once per session (the `meta` buffers of shapes and strides, index maps, resize tables), in the spirit
//! of TFLM's `Prepare`. An op or case the GPU cannot run is reported here, by op index and name.

use ember_core::format::DType;
use ember_core::ops::array::resize::ResizeMode;
use ember_core::ops::array::{broadcast, concat, gather, pad, resize, slice, transpose};
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::conv::Conv2dParams;
use ember_core::ops::nn::reduce::ReduceOp;
use ember_core::ops::pool::Pool2dParams;
use ember_core::ops::quant::conv::QuantConv2dParams;
use ember_core::OpKind;

mod quant;
mod rnn;
mod tables;

use tables::{
    conv_transpose_map, conv_transpose_refusal, im2col_fits, im2col_map, resize_filter_tables,
    resize_tables,
};

use super::index_map::index_map;
use crate::kernels::array::NO_SOURCE;
use crate::kernels::math::{binary_code as bc, code as uc};
use crate::kernels::nn::{conv_meta as cm, reduce_code as rc};
use crate::kernels::pool::pool_meta as pm;
use crate::kernels::MAX_RANK;

/// A fused activation: `code == 0` is the identity, anything else a clip to `[lo, hi]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Act {
    pub code: u32,
    pub lo: f32,
    pub hi: f32,
}

impl From<Activation> for Act {
    fn from(a: Activation) -> Self {
        let clip = |lo, hi| Act { code: 1, lo, hi };
        match a {
            Activation::None => Act {
                code: 0,
                lo: 0.0,
                hi: 0.0,
            },
            Activation::Relu => clip(0.0, f32::INFINITY),
            Activation::Relu6 => clip(0.0, 6.0),
            Activation::Clip { min, max } => clip(min, max),
        }
    }
}

/// Host-side data a launch needs on the device (uploaded once when the session opens).
#[derive(Clone, Debug)]
pub(crate) enum Table {
    U32(Vec<u32>),
    F32(Vec<f32>),
    I32(Vec<i32>),
}

/// One kernel launch; tensors are tensor ids, tables index the op's uploaded tables.
#[derive(Clone, Debug)]
pub(crate) enum Launch {
    /// A kernel the device cannot run (tests only; `kernels::refused`): `what` picks how it fails.
    #[cfg(test)]
    Refused {
        what: u32,
    },
    Unary {
        x: usize,
        op: u32,
        a: f32,
        b: f32,
    },
    Binary {
        a: usize,
        b: usize,
        meta: usize,
        op: u32,
        act: Act,
    },
    /// A convolution or a fully connected layer: `meta` is the kernel's.
    Layer {
        kernel: LayerKernel,
        x: usize,
        w: usize,
        b: Option<usize>,
        meta: usize,
        act: Act,
    },
    MatMul {
        a: usize,
        b: usize,
        meta: usize,
    },
    Softmax {
        x: usize,
        meta: usize,
        log: bool,
        lanes: usize,
    },
    LayerNorm {
        x: usize,
        scale: usize,
        bias: Option<usize>,
        meta: usize,
        epsilon: f32,
        rows: usize,
    },
    Reduce {
        x: usize,
        meta: usize,
        op: u32,
    },
    Pool {
        x: usize,
        meta: usize,
        avg: bool,
    },
    GlobalAvgPool {
        x: usize,
        meta: usize,
    },
    GatherMap {
        x: usize,
        map: usize,
        lo: u32,
        hi: u32,
        fill: Option<f32>,
        /// Where to write: the op's output (`None`) or one of its scratch tensors.
        into: Option<usize>,
    },
    ResizeLinear {
        x: usize,
        rows: usize,
        fracs: usize,
    },
    /// Bicubic or antialiased resize through per-row and per-column taps ([`resize_filter_tables`]).
    ResizeFilter {
        x: usize,
        rows: usize,
        weights: usize,
    },
    /// An int8 layer: `rows` is the requantization tensor, `params` an i32 table (`quant::params`).
    QuantLayer {
        kernel: LayerKernel,
        x: usize,
        w: usize,
        b: Option<usize>,
        rows: usize,
        meta: usize,
        params: usize,
    },
    /// int8 Add (`op == 0`) or Mul (`op == 1`).
    QuantBinary {
        a: usize,
        b: usize,
        meta: usize,
        params: usize,
        op: u32,
    },
    QuantPool {
        x: usize,
        meta: usize,
        params: usize,
        avg: bool,
    },
    Quantize {
        x: usize,
        scale: f32,
        zero_point: i32,
        even: bool,
    },
    Dequantize {
        x: usize,
        scale: f32,
        zero_point: f32,
    },
    Requantize {
        x: usize,
        params: usize,
    },
    /// One phase of a recurrent layer at one time step (`kernels::rnn`), one unit per `(direction,
    /// batch row, hidden unit)`.
    Rnn {
        x: usize,
        w: usize,
        r: usize,
        b: Option<usize>,
        h0: Option<usize>,
        c0: Option<usize>,
        p: Option<usize>,
        meta: usize,
        clip: f32,
        phase: u32,
        step: u32,
        units: usize,
    },
    /// int8 Softmax: `exps` is the exponential table (i32), one unit per lane.
    QuantSoftmax {
        x: usize,
        exps: usize,
        meta: usize,
        lanes: usize,
    },
    /// int8 lookup: `table` is the op's 256-entry weight (widened to i32 like every int8 weight).
    QuantLut {
        x: usize,
        table: usize,
    },
}

/// What one op does on the device.
#[derive(Clone, Debug)]
pub(crate) enum Work {
    /// Reshape: the output is the input's buffer under other dims.
    Alias { x: usize },
    /// Kernel launches, in order, all writing the op's output.
    Launches(Vec<Launch>),
    /// The op runs on the host (`host.rs`): the device has no kernel for it, or it reads or writes a
    /// tensor the device does not hold.
    Host(Box<super::host::HostOp>),
}

/// An op lowered for the device, with the tables its launches read and the scratch tensors it needs
/// (their element counts; a launch names scratch tensor `k` as tensor id `OpView::scratch_base + k`).
pub(crate) struct Lowered {
    pub work: Work,
    pub tables: Vec<Table>,
    pub scratch: Vec<usize>,
}

/// What lowering needs to know about one op.
pub(crate) struct OpView<'a> {
    pub kind: OpKind,
    pub inputs: &'a [usize],
    pub input_dims: Vec<&'a [usize]>,
    pub output_dims: &'a [usize],
    /// The output's dtype (an int8 tensor is held as f32 integer values on the device).
    pub output_dtype: DType,
    /// f32 contents of inputs that are weights (None for activations).
    pub input_weights: Vec<Option<&'a [f32]>>,
    /// The tensor id the op's first scratch tensor gets.
    pub scratch_base: usize,
}

fn right_align(dims: &[usize], rank: usize) -> [usize; MAX_RANK] {
    let mut out = [1; MAX_RANK];
    out[rank - dims.len()..rank].copy_from_slice(dims);
    out
}

fn row_major_strides(dims: &[usize]) -> [usize; MAX_RANK] {
    let mut strides = [0; MAX_RANK];
    let mut step = 1usize;
    for (s, &d) in strides.iter_mut().zip(dims).rev() {
        *s = step;
        step *= d;
    }
    strides
}

fn broadcast_strides(dims: &[usize]) -> [usize; MAX_RANK] {
    let mut strides = row_major_strides(dims);
    for (s, &d) in strides.iter_mut().zip(dims) {
        if d == 1 {
            *s = 0;
        }
    }
    strides
}

/// Adds `t` to an op's tables and returns its index (what a launch names it by).
pub(super) fn add_table(tables: &mut Vec<Table>, t: Table) -> usize {
    tables.push(t);
    tables.len() - 1
}

pub(super) fn u32s(values: impl IntoIterator<Item = usize>) -> Result<Vec<u32>, String> {
    values
        .into_iter()
        .map(|v| u32::try_from(v).map_err(|_| format!("a size or stride ({v}) is above u32")))
        .collect()
}

fn unary_code(op: UnaryOp) -> (u32, f32, f32) {
    use UnaryOp as U;
    match op {
        U::Relu => (uc::RELU, 0.0, 0.0),
        U::Relu6 => (uc::CLIP, 0.0, 6.0),
        U::Clip { min, max } => (uc::CLIP, min, max),
        U::Sigmoid => (uc::SIGMOID, 0.0, 0.0),
        U::Tanh => (uc::TANH, 0.0, 0.0),
        U::Abs => (uc::ABS, 0.0, 0.0),
        U::Neg => (uc::NEG, 0.0, 0.0),
        U::Sqrt => (uc::SQRT, 0.0, 0.0),
        U::Exp => (uc::EXP, 0.0, 0.0),
        U::Log => (uc::LOG, 0.0, 0.0),
        U::Erf => (uc::ERF, 0.0, 0.0),
        U::Gelu => (uc::GELU, 0.0, 0.0),
        U::GeluTanh => (uc::GELU_TANH, 0.0, 0.0),
        U::Floor => (uc::FLOOR, 0.0, 0.0),
        U::Ceil => (uc::CEIL, 0.0, 0.0),
        U::Round => (uc::ROUND, 0.0, 0.0),
        U::Reciprocal => (uc::RECIPROCAL, 0.0, 0.0),
        U::LeakyRelu { alpha } => (uc::LEAKY_RELU, alpha, 0.0),
        U::HardSigmoid { alpha, beta } => (uc::HARD_SIGMOID, alpha, beta),
        U::HardSwish => (uc::HARD_SWISH, 0.0, 0.0),
        U::Elu { alpha } => (uc::ELU, alpha, 0.0),
        U::Selu { alpha, gamma } => (uc::SELU, alpha, gamma),
        U::Softplus => (uc::SOFTPLUS, 0.0, 0.0),
        U::Softsign => (uc::SOFTSIGN, 0.0, 0.0),
        U::Sign => (uc::SIGN, 0.0, 0.0),
        U::Sin => (uc::SIN, 0.0, 0.0),
        U::Cos => (uc::COS, 0.0, 0.0),
        U::Tan => (uc::TAN, 0.0, 0.0),
        U::Asin => (uc::ASIN, 0.0, 0.0),
        U::Acos => (uc::ACOS, 0.0, 0.0),
        U::Atan => (uc::ATAN, 0.0, 0.0),
        U::Sinh => (uc::SINH, 0.0, 0.0),
        U::Cosh => (uc::COSH, 0.0, 0.0),
        U::Asinh => (uc::ASINH, 0.0, 0.0),
        U::Acosh => (uc::ACOSH, 0.0, 0.0),
        U::Atanh => (uc::ATANH, 0.0, 0.0),
        U::Celu { alpha } => (uc::CELU, alpha, 0.0),
        U::ThresholdedRelu { alpha } => (uc::THRESHOLDED_RELU, alpha, 0.0),
        U::Mish => (uc::MISH, 0.0, 0.0),
        U::Shrink { bias, lambd } => (uc::SHRINK, bias, lambd),
        U::Swish { alpha } => (uc::SWISH, alpha, 0.0),
        U::ScaledHardSwish { scale, offset } => (uc::SCALED_HARD_SWISH, scale, offset),
    }
}

fn binary_code(op: BinaryOp) -> u32 {
    match op {
        BinaryOp::Add => bc::ADD,
        BinaryOp::Sub => bc::SUB,
        BinaryOp::Mul => bc::MUL,
        BinaryOp::Div => bc::DIV,
        BinaryOp::Pow => bc::POW,
        BinaryOp::Min => bc::MIN,
        BinaryOp::Max => bc::MAX,
        BinaryOp::PRelu => bc::PRELU,
        BinaryOp::Mod => bc::MOD,
        BinaryOp::FloorMod => bc::FLOOR_MOD,
    }
}

fn reduce_code(op: ReduceOp) -> u32 {
    match op {
        ReduceOp::Sum => rc::SUM,
        ReduceOp::Mean => rc::MEAN,
        ReduceOp::Max => rc::MAX,
        ReduceOp::Min => rc::MIN,
        ReduceOp::Prod => rc::PROD,
        ReduceOp::L1 => rc::L1,
        ReduceOp::L2 => rc::L2,
        ReduceOp::LogSumExp => rc::LOG_SUM_EXP,
        ReduceOp::SumSquare => rc::SUM_SQUARE,
        ReduceOp::LogSum => rc::LOG_SUM,
    }
}

/// Lowers one op; the error says what the GPU path is missing.
pub(crate) fn lower(op: &OpView<'_>) -> Result<Lowered, String> {
    let mut scratch = Vec::new();
    let mut tables = Vec::new();
    if let Some(work) = quant::lower(op, &mut tables)? {
        return Ok(Lowered {
            work,
            tables,
            scratch,
        });
    }
    if let OpKind::Rnn(p) = op.kind {
        let work = rnn::lower(op, &p, &mut tables)?;
        return Ok(Lowered {
            work,
            tables,
            scratch,
        });
    }
    let mut table = |t: Table| add_table(&mut tables, t);
    let (x, xd, yd) = (op.inputs[0], op.input_dims[0], op.output_dims);
    let input = |k: usize| op.inputs.get(k).copied();
    let launch = |l: Launch| Work::Launches(vec![l]);
    let work = match op.kind {
        OpKind::Reshape => Work::Alias { x },
        OpKind::Unary(p) => {
            let (code, a, b) = unary_code(p.op);
            launch(Launch::Unary { x, op: code, a, b })
        }
        OpKind::Binary(p) => {
            let meta = table(Table::U32(u32s(binary_meta(xd, op.input_dims[1], yd))?));
            launch(Launch::Binary {
                a: x,
                b: op.inputs[1],
                meta,
                op: binary_code(p.op),
                act: p.act.into(),
            })
        }
        // im2col + GEMM: gather every output pixel's window into a row of a [pixels, taps] scratch
        // matrix (zeros where the window hangs over the padding, or for a transposed convolution where
        // no input pixel scatters through that tap), then the fully connected kernel multiplies it by
        // the [OC, taps] weights (OHWI is already that layout) and adds the bias.
        OpKind::Conv2d(p) if im2col_fits(&p, xd, op.input_dims[1], yd) => {
            let map = table(Table::U32(im2col_map(&p, xd, op.input_dims[1], yd)));
            let meta = table(Table::U32(im2col_gemm_meta(op)?));
            im2col_gemm(op, &mut scratch, map, meta, p.act)
        }
        OpKind::ConvTranspose2d(p) => {
            if let Some(why) = conv_transpose_refusal(&p, op.input_dims[1], yd) {
                return Err(why);
            }
            let map = table(Table::U32(conv_transpose_map(&p, xd, op.input_dims[1], yd)));
            let meta = table(Table::U32(im2col_gemm_meta(op)?));
            im2col_gemm(op, &mut scratch, map, meta, p.act)
        }
        OpKind::Conv2d(_) | OpKind::FullyConnected(_) => {
            let (wd, has_bias) = (op.input_dims[1], input(2).is_some());
            let (kernel, meta, act) = match op.kind {
                OpKind::Conv2d(p) => {
                    let meta = conv_meta(xd, wd, yd, &p, has_bias);
                    (LayerKernel::Conv2d, meta, p.act)
                }
                OpKind::FullyConnected(p) => {
                    let meta = fully_connected_meta(wd, has_bias).to_vec();
                    (LayerKernel::FullyConnected, meta, p.act)
                }
                _ => unreachable!("matched above"),
            };
            launch(Launch::Layer {
                kernel,
                x,
                w: op.inputs[1],
                b: input(2),
                meta: table(Table::U32(u32s(meta)?)),
                act: act.into(),
            })
        }
        OpKind::MatMul(_) => {
            let rank = yd.len();
            let bd = op.input_dims[1];
            let (m, k, n) = (xd[xd.len() - 2], xd[xd.len() - 1], bd[bd.len() - 1]);
            let sa = broadcast_strides(&right_align(xd, rank)[..rank]);
            let sb = broadcast_strides(&right_align(bd, rank)[..rank]);
            let mut batch = [1usize; MAX_RANK];
            batch[..rank - 2].copy_from_slice(&yd[..rank - 2]);
            let mut meta = vec![rank - 2, m, k, n];
            meta.extend_from_slice(&batch);
            meta.extend_from_slice(&sa);
            meta.extend_from_slice(&sb);
            let meta = table(Table::U32(u32s(meta)?));
            launch(Launch::MatMul {
                a: x,
                b: op.inputs[1],
                meta,
            })
        }
        OpKind::Softmax(p) | OpKind::LogSoftmax(p) => {
            let meta = softmax_meta(xd, p.axis);
            let lanes = meta[2];
            let meta = table(Table::U32(u32s(meta)?));
            launch(Launch::Softmax {
                x,
                meta,
                log: matches!(op.kind, OpKind::LogSoftmax(_)),
                lanes,
            })
        }
        // Layer and RMS normalization: one kernel, meta[3] says which.
        OpKind::LayerNorm(_) | OpKind::RmsNorm(_) => {
            let (axis, epsilon, rms) = match op.kind {
                OpKind::LayerNorm(p) => (p.axis, p.epsilon, false),
                OpKind::RmsNorm(p) => (p.axis, p.epsilon, true),
                _ => unreachable!("matched above"),
            };
            let len: usize = xd[usize::from(axis)..].iter().product();
            let total: usize = xd.iter().product();
            let rows = total.checked_div(len).unwrap_or(0);
            let bias = input(2).filter(|_| !rms);
            let meta = table(Table::U32(u32s([
                len,
                rows,
                usize::from(bias.is_some()),
                usize::from(rms),
            ])?));
            launch(Launch::LayerNorm {
                x,
                scale: op.inputs[1],
                bias,
                meta,
                epsilon,
                rows,
            })
        }
        OpKind::Reduce(p) => {
            let rank = xd.len();
            let strides = row_major_strides(xd);
            let (mut kept, mut lane) = ([1usize; MAX_RANK], [1usize; MAX_RANK]);
            for d in 0..rank {
                if p.axes & (1 << d) != 0 {
                    lane[d] = xd[d];
                } else {
                    kept[d] = xd[d];
                }
            }
            let count: usize = lane[..rank].iter().product();
            let mut meta = vec![rank, count];
            meta.extend_from_slice(&kept);
            meta.extend_from_slice(&lane);
            meta.extend_from_slice(&strides);
            let meta = table(Table::U32(u32s(meta)?));
            launch(Launch::Reduce {
                x,
                meta,
                op: reduce_code(p.op),
            })
        }
        OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => {
            let meta = table(Table::U32(u32s(pool_meta(xd, yd, &p))?));
            launch(Launch::Pool {
                x,
                meta,
                avg: matches!(op.kind, OpKind::AvgPool2d(_)),
            })
        }
        OpKind::GlobalAvgPool => {
            let meta = table(Table::U32(u32s([xd[1] * xd[2], xd[3]])?));
            launch(Launch::GlobalAvgPool { x, meta })
        }
        OpKind::Resize(p) if p.mode == ResizeMode::Linear => {
            let (rows, fracs) = resize_tables(&p, xd, yd);
            let rows = table(Table::U32(u32s(rows)?));
            let fracs = table(Table::F32(fracs));
            launch(Launch::ResizeLinear { x, rows, fracs })
        }
        OpKind::Resize(p)
            if matches!(
                p.mode,
                ResizeMode::Cubic { .. } | ResizeMode::LinearAntialias { .. }
            ) =>
        {
            let (rows, weights) = resize_filter_tables(&p, xd, yd);
            let rows = table(Table::U32(u32s(rows)?));
            let weights = table(Table::F32(weights));
            launch(Launch::ResizeFilter { x, rows, weights })
        }
        // Pure data movement: a gather through an index map computed by the reference kernel.
        OpKind::Transpose(_)
        | OpKind::Slice(_)
        | OpKind::Pad(_)
        | OpKind::Broadcast
        | OpKind::Gather(_)
        | OpKind::Resize(_) => {
            let map = movement_map(op)?;
            let fill = match op.kind {
                // An int8 tensor pads with the value as the CPU's int8 data movement converts it.
                OpKind::Pad(p) if op.output_dtype == DType::I8 => Some(f32::from(p.value as i8)),
                OpKind::Pad(p) => Some(p.value),
                _ => None,
            };
            let map = table(Table::U32(map));
            launch(Launch::GatherMap {
                x,
                map,
                lo: 0,
                hi: NO_SOURCE,
                fill,
                into: None,
            })
        }
        OpKind::Concat(p) => {
            let map = index_map(&op.input_dims, yd, |xs, y| {
                concat::concat(&p, xs, y);
            })
            .ok_or("concat inputs hold more than 2^32 elements")?;
            let map = table(Table::U32(map));
            let mut launches = Vec::new();
            let mut lo = 0usize;
            for (k, dims) in op.input_dims.iter().enumerate() {
                let len: usize = dims.iter().product();
                if len > 0 {
                    launches.push(Launch::GatherMap {
                        x: op.inputs[k],
                        map,
                        lo: lo as u32,
                        hi: (lo + len) as u32,
                        fill: None,
                        into: None,
                    });
                }
                lo += len;
            }
            Work::Launches(launches)
        }
        #[allow(unreachable_patterns)]
        _ => return Err("no GPU kernel for this op".into()),
    };
    Ok(Lowered {
        work,
        tables,
        scratch,
    })
}

/// The GEMM's `meta` of [`im2col_gemm`]: the `[OC, KH, KW, IC]` weights as `[OC, taps]`.
fn im2col_gemm_meta(op: &OpView<'_>) -> Result<Vec<u32>, String> {
    let wd = op.input_dims[1];
    u32s(fully_connected_meta(
        &[wd[0], wd[1] * wd[2] * wd[3]],
        op.inputs.len() > 2,
    ))
}

/// The launches of a convolution as im2col + GEMM: a gather through the table `map` into a
/// `[pixels, taps]` scratch matrix it adds to `scratch`, then the fully connected kernel (its `meta`
/// table from [`im2col_gemm_meta`]) over the weights, with the bias and `act`.
fn im2col_gemm(
    op: &OpView<'_>,
    scratch: &mut Vec<usize>,
    map: usize,
    meta: usize,
    act: Activation,
) -> Work {
    let (wd, yd) = (op.input_dims[1], op.output_dims);
    let col = op.scratch_base + scratch.len();
    scratch.push(yd[0] * yd[1] * yd[2] * wd[1] * wd[2] * wd[3]);
    Work::Launches(vec![
        Launch::GatherMap {
            x: op.inputs[0],
            map,
            lo: 0,
            hi: NO_SOURCE,
            fill: Some(0.0),
            into: Some(col),
        },
        Launch::Layer {
            kernel: LayerKernel::FullyConnected,
            x: col,
            w: op.inputs[1],
            b: op.inputs.get(2).copied(),
            meta,
            act: act.into(),
        },
    ])
}

/// Which kernel a layer launch runs: a convolution's or a fully connected layer's, which take the
/// same arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LayerKernel {
    Conv2d,
    FullyConnected,
}

/// The window of a convolution, f32 or int8.
pub(super) struct ConvWindow {
    groups: u16,
    stride: (u16, u16),
    dilation: (u16, u16),
    pad: (u16, u16),
}

/// `ConvWindow::from(&params)` for each convolution's parameters (their geometry fields have the same
/// names).
macro_rules! conv_window_from {
    ($($params:ty),*) => {$(
        impl From<&$params> for ConvWindow {
            fn from(p: &$params) -> Self {
                ConvWindow {
                    groups: p.groups,
                    stride: (p.stride_h, p.stride_w),
                    dilation: (p.dilation_h, p.dilation_w),
                    pad: (p.pad_top, p.pad_left),
                }
            }
        }
    )*};
}

conv_window_from!(Conv2dParams, QuantConv2dParams);

/// A fully connected layer's `meta`: `[in features, out features, has bias]` from its `[OUT, IN]`
/// weights' dims `wd`.
pub(super) fn fully_connected_meta(wd: &[usize], bias: bool) -> [usize; 3] {
    [wd[1], wd[0], usize::from(bias)]
}

/// A convolution's `meta` (`nn::conv_meta`): NHWC `xd`, OHWI `wd`, NHWC `yd`, the window of `window`
/// (a convolution's parameters).
pub(super) fn conv_meta(
    xd: &[usize],
    wd: &[usize],
    yd: &[usize],
    window: impl Into<ConvWindow>,
    bias: bool,
) -> Vec<usize> {
    let c: ConvWindow = window.into();
    let mut meta = vec![0usize; cm::LEN];
    meta[cm::N] = xd[0];
    meta[cm::H] = xd[1];
    meta[cm::W] = xd[2];
    meta[cm::IC] = xd[3];
    meta[cm::OH] = yd[1];
    meta[cm::OW] = yd[2];
    meta[cm::OC] = yd[3];
    meta[cm::KH] = wd[1];
    meta[cm::KW] = wd[2];
    meta[cm::GROUP_IC] = wd[3];
    meta[cm::GROUP_OC] = wd[0] / usize::from(c.groups.max(1));
    meta[cm::STRIDE_H] = c.stride.0.into();
    meta[cm::STRIDE_W] = c.stride.1.into();
    meta[cm::DIL_H] = c.dilation.0.into();
    meta[cm::DIL_W] = c.dilation.1.into();
    meta[cm::PAD_TOP] = c.pad.0.into();
    meta[cm::PAD_LEFT] = c.pad.1.into();
    meta[cm::HAS_BIAS] = usize::from(bias);
    meta
}

/// A pooling kernel's `meta` (`pool::pool_meta`).
pub(super) fn pool_meta(xd: &[usize], yd: &[usize], p: &Pool2dParams) -> Vec<usize> {
    let mut meta = vec![0usize; pm::LEN];
    meta[pm::H] = xd[1];
    meta[pm::W] = xd[2];
    meta[pm::C] = xd[3];
    meta[pm::OH] = yd[1];
    meta[pm::OW] = yd[2];
    meta[pm::KH] = p.kernel_h.into();
    meta[pm::KW] = p.kernel_w.into();
    meta[pm::STRIDE_H] = p.stride_h.into();
    meta[pm::STRIDE_W] = p.stride_w.into();
    meta[pm::PAD_TOP] = p.pad_top.into();
    meta[pm::PAD_LEFT] = p.pad_left.into();
    meta[pm::INCLUDE_PAD] = usize::from(p.count_include_pad);
    meta
}

/// A softmax kernel's `meta` (f32 or int8), softmax along `axis`: `[axis length, inner size (the
/// elements after the axis), lanes]`.
pub(super) fn softmax_meta(xd: &[usize], axis: u8) -> [usize; 3] {
    let axis = usize::from(axis);
    let len = xd[axis];
    let inner: usize = xd[axis + 1..].iter().product();
    let total: usize = xd.iter().product();
    [len, inner, total.checked_div(len).unwrap_or(0)]
}

/// A broadcasting binary kernel's `meta`: rank, output dims, then both inputs' broadcast strides.
pub(super) fn binary_meta(ad: &[usize], bd: &[usize], yd: &[usize]) -> Vec<usize> {
    let rank = yd.len().max(1);
    let mut meta = vec![rank];
    meta.extend_from_slice(&right_align(yd, rank));
    meta.extend_from_slice(&broadcast_strides(&right_align(ad, rank)[..rank]));
    meta.extend_from_slice(&broadcast_strides(&right_align(bd, rank)[..rank]));
    meta
}

/// The index map of a single-input data-movement op.
fn movement_map(op: &OpView<'_>) -> Result<Vec<u32>, String> {
    let x_dims = [op.input_dims[0]];
    let yd = op.output_dims;
    let map = match op.kind {
        OpKind::Transpose(p) => index_map(&x_dims, yd, |x, y| transpose::transpose(&p, x[0], y)),
        OpKind::Slice(p) => index_map(&x_dims, yd, |x, y| slice::slice(&p, x[0], y)),
        OpKind::Pad(p) => {
            let marked = pad::PadParams { value: -1.0, ..p };
            index_map(&x_dims, yd, |x, y| pad::pad(&marked, x[0], y))
        }
        OpKind::Broadcast => index_map(&x_dims, yd, |x, y| broadcast::broadcast(x[0], y)),
        OpKind::Resize(p) => index_map(&x_dims, yd, |x, y| resize::resize(&p, x[0], y)),
        OpKind::Gather(p) => {
            let indices = op
                .input_weights
                .get(1)
                .copied()
                .flatten()
                .ok_or("gather indices are not a weight tensor")?;
            let idx_dims = op.input_dims[1];
            index_map(&x_dims, yd, |x, y| {
                let idx = ember_core::ops::In {
                    data: indices,
                    dims: idx_dims,
                };
                gather::gather(&p, x[0], idx, y)
            })
        }
        _ => return Err("not a data-movement op".into()),
    };
    map.ok_or_else(|| "input holds more than 2^32 elements".into())
}
