//! Convolutions, dense and recurrent layers, pooling, normalization and reductions.

use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::nn::reduce::ReduceOp;
use ember_core::ops::nn::rnn::{RnnCell, RnnDirection, RnnParams};
use ember_core::OpKind;

use super::{binary_op, positive, Ctx, R};
use crate::ir::op::{Conv2d, ConvTranspose2d, Slice};
use crate::ir::quant::Quant;
use crate::ir::{ConstData, Op, Pool2d, SpatialLayout, TensorId};
use crate::tflite::schema::{ActivationFunctionType, BuiltinOptionsRef as O, Padding};
use crate::tflite::OpError;

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

pub(super) fn conv(c: &mut Ctx<'_, '_>, options: Option<O<'_>>, depthwise: bool) -> R<()> {
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

pub(super) fn transpose_conv(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
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

pub(super) fn fully_connected(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (act, keep) = match options {
        Some(O::FullyConnectedOptions(o)) => {
            if o.weights_format()?
                != crate::tflite::schema::FullyConnectedOptionsWeightsFormat::Default
            {
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

pub(super) fn pool(c: &mut Ctx<'_, '_>, options: Option<O<'_>>, max: bool) -> R<()> {
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

pub(super) fn batch_matmul(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
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
pub(super) fn lstm(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
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

pub(super) fn softmax(c: &mut Ctx<'_, '_>, options: Option<O<'_>>, log: bool) -> R<()> {
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

pub(super) fn reduce(c: &mut Ctx<'_, '_>, op: ReduceOp, options: Option<O<'_>>) -> R<()> {
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
