//! QDQ fusion: a float op whose inputs are int8 Dequantizes and whose output only feeds an int8
//! Quantize becomes the int8 op of the TFLite int8 spec, reading the int8 tensors directly and
//! writing the Quantize's output. The fused node is named `op+quantize` (`op` when both have one name).
//!
//! | float op | int8 op | condition |
//! | --- | --- | --- |
//! | Conv2d (fused Relu/Relu6/Clip) | QuantConv2d | weights a constant dequantized from symmetric int8 (per tensor or per output channel) |
//! | FullyConnected (Gemm, MatMul with constant B) | QuantFullyConnected | as Conv2d |
//! | Add, Mul (fused activation) | QuantAdd, QuantMul | both operands dequantized at run time, or one an f32 constant (quantized here, per tensor) |
//! | Sub, Div by an f32 constant | QuantAdd, QuantMul | the constant negated or inverted |
//! | Div(Mul(a, b), c), c a positive scalar constant | QuantMul | the division folded into the output scale |
//! | Max, Min with a finite scalar constant | QuantLut | its table, as for a Unary |
//! | MaxPool, AvgPool, GlobalAvgPool | QuantMaxPool2d, QuantAvgPool2d (the whole image for GlobalAvgPool) | followed by a Requantize when input and output parameters differ |
//! | Softmax (last axis, at most 4,095 long) | QuantSoftmax | output scale 1/256, zero point -128 (TFLite's); a longer axis stays float |
//! | any Unary (HardSwish, Sigmoid, LeakyRelu, Gelu, ...) | QuantLut | its 256-entry table: the float op's own kernel between the Dequantize and the Quantize |
//! | Reshape, Transpose, Concat | the same op on int8 | every input and the output share scale and zero point |
//! | Dequantize -> Pad | Pad (int8) -> Dequantize | the fill value is exactly an int8 value |
//! | Dequantize -> Quantize | Requantize (or a free Reshape when the parameters are equal) | |
//!
//! Before that, uint8 round trips (a uint8 Quantize's output dequantized as uint8, each moved to and
//! from int8 by the importers) are cancelled, so uint8 QDQ models run in int8 with no conversion
//! between their ops.
//!
//! Requantization rows `(multiplier, shift)` for `x_scale * w_scale[c] / y_scale` and int32 biases
//! (`round(b / (x_scale * w_scale[c]))`) are computed here as constants, in f64 from the f32 scales as
//! TFLM's `Prepare` does. The weights are the model's own int8 values (`ir::quant::Quant` on the
//! dequantized constant). Anything else stays float between its Dequantize and Quantize: correct,
//! only slower.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::{self, UnaryParams};
use ember_core::ops::quant::add::QuantAddParams;
use ember_core::ops::quant::dequantize::DequantizeParams;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
use ember_core::ops::quant::lut;
use ember_core::ops::quant::mul::QuantMulParams;
use ember_core::ops::quant::quantize::QuantizeParams;
use ember_core::ops::quant::requant::{
    activation_range, channel_multiplier, RequantRounding, MAX_SHIFT, MIN_SHIFT,
};
use ember_core::ops::quant::requantize::RequantizeParams;
use ember_core::ops::quant::softmax::{self, QuantSoftmaxParams};

use crate::ir::quant::{Quant, QuantOp};
use crate::ir::{ConstData, DType, Graph, Node, Op, Pool2d, SpatialLayout, TensorId};
use crate::ConvertError;

/// Fuses every pattern it finds.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let mut changed = cancel_uint8_round_trips(g);
    // Each fusion removes one node, so this ends.
    while let Some((mut idx, fused, remove)) = find(g) {
        if let Some(r) = remove {
            g.nodes.remove(r);
            if r < idx {
                idx -= 1;
            }
        }
        g.nodes.splice(idx..=idx, fused);
        changed = true;
    }
    Ok(changed)
}

/// Makes the readers of `int8 -> uint8 -> int8` conversions (a uint8 QuantizeLinear's output read by
/// a uint8 DequantizeLinear: `Cast(u8)`, `Add 128`, `Add 128`, `Cast(i8)`, wrapping) read the int8
/// tensor itself; the conversions then die. True if some reader moved.
fn cancel_uint8_round_trips(g: &mut Graph) -> bool {
    let plus_128 =
        |g: &Graph, n: &Node| {
            matches!(n.op, Op::Binary { op: BinaryOp::Add, act: Activation::None })
            && g.tensor(n.output).dtype == DType::U8
            && n.inputs.get(1).is_some_and(|&k| {
                matches!(&g.tensor(k).data, Some(ConstData::I64(v)) if v.as_slice() == [128])
            })
        };
    let node_of = |g: &Graph, t: TensorId| g.producer(t).map(|i| g.nodes[i].clone());
    let mut moves = Vec::new();
    for n in &g.nodes {
        if n.op != (Op::Cast { to: DType::I8 }) || g.use_count(n.output) == 0 {
            continue;
        }
        let Some(a2) = node_of(g, n.inputs[0]).filter(|a| plus_128(g, a)) else {
            continue;
        };
        let Some(a1) = node_of(g, a2.inputs[0]).filter(|a| plus_128(g, a)) else {
            continue;
        };
        let Some(c) = node_of(g, a1.inputs[0]) else {
            continue;
        };
        let source = c.inputs[0];
        if c.op == (Op::Cast { to: DType::U8 }) && g.tensor(source).dtype == DType::I8 {
            moves.push((n.output, source));
        }
    }
    for &(from, to) in &moves {
        g.replace_node_inputs(from, to);
    }
    !moves.is_empty()
}

/// True for the data-movement ops a (de)quantization commutes with.
fn moves_data(op: &Op) -> bool {
    matches!(op, Op::Reshape { .. } | Op::Transpose { .. })
}

/// `Dequantize -> Reshape/Transpose` becomes `Reshape/Transpose (int8) -> Dequantize`, so the
/// float op after it sees a Dequantize (a Flatten before a Gemm, the Reshape of a 1-D Conv). So does
/// a Pad whose fill value int8 holds exactly (the zeros an AveragePool with `ceil_mode` and
/// `count_include_pad` pads with first), filling with that int8 value.
fn sink_dequantize(g: &mut Graph, idx: usize) -> Option<Vec<Node>> {
    let n = &g.nodes[idx];
    if n.inputs.len() != 1 {
        return None;
    }
    let (x8, xq) = dequantized(g, n.inputs[0])?;
    let op = match &n.op {
        Op::Pad {
            before,
            after,
            value,
        } => Op::Pad {
            before: before.clone(),
            after: after.clone(),
            value: f32::from(exact_int8(*value, xq)?),
        },
        op if moves_data(op) => op.clone(),
        _ => return None,
    };
    let mut n = n.clone();
    n.op = op;
    let shape = g.tensor(n.output).shape.clone();
    let moved = g.add_activation_of(
        &format!("{}.int8", g.tensor(n.output).name),
        shape,
        DType::I8,
    );
    g.tensor_mut(moved).quant = Some(Quant::per_tensor(xq.0, xq.1));
    let p = DequantizeParams {
        scale: xq.0,
        zero_point: xq.1,
    };
    Some(vec![
        Node {
            inputs: vec![x8],
            output: moved,
            ..n.clone()
        },
        Node {
            name: format!("{}.dequantize", n.name),
            onnx_op: n.onnx_op.clone(),
            op: Op::Quant(QuantOp::Dequantize(p)),
            inputs: vec![moved],
            output: n.output,
        },
    ])
}

/// `Reshape/Transpose -> Quantize` (of a float value only the Reshape reads) becomes
/// `Quantize -> Reshape/Transpose (int8)`, so the Quantize follows the op that computed the value.
/// Returns the replacement of the Quantize at `idx` and the index of the Reshape to remove.
fn hoist_quantize(g: &mut Graph, idx: usize) -> Option<(Vec<Node>, usize)> {
    let q = &g.nodes[idx];
    let Op::Quant(QuantOp::Quantize(p)) = &q.op else {
        return None;
    };
    let r_idx = g.producer(q.inputs[0])?;
    let r = &g.nodes[r_idx];
    if !moves_data(&r.op)
        || r.inputs.len() != 1
        || g.use_count(r.output) != 1
        || g.is_kept(r.output)
    {
        return None;
    }
    let x = r.inputs[0];
    let xt = g.tensor(x);
    if xt.dtype != DType::F32 || xt.data.is_some() || g.is_kept(x) || g.use_count(x) != 1 {
        return None;
    }
    g.producer(x)?;
    let (p, q, r) = (*p, q.clone(), r.clone());
    let shape = g.tensor(x).shape.clone();
    let q8 = g.add_activation_of(&format!("{}.int8", g.tensor(x).name), shape, DType::I8);
    g.tensor_mut(q8).quant = Some(Quant::per_tensor(p.scale, p.zero_point));
    Some((
        vec![
            Node {
                inputs: vec![x],
                output: q8,
                ..q.clone()
            },
            Node {
                inputs: vec![q8],
                output: q.output,
                ..r
            },
        ],
        r_idx,
    ))
}

/// Add, Sub, Mul or Div between int8 operands as QuantAdd or QuantMul: both operands dequantized at
/// run time (Add, Mul), or one an f32 constant (either side of Add and Mul; the second of Sub and Div,
/// negated or inverted), which becomes an int8 constant here ([`quantize_constant`]): a bias, a scale,
/// HardSwish's `+ 3` and `/ 6` written out. `None` (the op stays float) for anything else, or when a
/// rescaling shift falls outside what the kernels take.
fn fuse_binary(
    g: &mut Graph,
    n: &Node,
    op: BinaryOp,
    act: Activation,
    yq: Affine,
) -> Option<(Op, Vec<TensorId>)> {
    if op == BinaryOp::Div {
        if let Some(fused) = fuse_scaled_product(g, n, act, yq) {
            return Some(fused);
        }
    }
    let (a, b) = (*n.inputs.first()?, *n.inputs.get(1)?);
    let commutes = matches!(op, BinaryOp::Add | BinaryOp::Mul);
    let adds = matches!(op, BinaryOp::Add | BinaryOp::Sub);
    if !commutes && !matches!(op, BinaryOp::Sub | BinaryOp::Div) {
        return None;
    }
    // The dequantized operand, and the other: dequantized too, or a constant's int8 values.
    let ((x, xq), other) = match (dequantized(g, a), dequantized(g, b)) {
        (Some(x), Some(y)) if commutes => (x, Ok(y)),
        (Some(x), None) => {
            let values = g.const_f32(b)?.iter().map(|&v| match op {
                BinaryOp::Sub => -v,
                BinaryOp::Div => 1.0 / v,
                _ => v,
            });
            (x, Err((b, quantize_constant(values)?)))
        }
        (None, Some(x)) if commutes => (
            x,
            Err((a, quantize_constant(g.const_f32(a)?.iter().copied())?)),
        ),
        _ => return None,
    };
    let bq = match &other {
        Ok((_, q)) => *q,
        Err((_, (_, q))) => *q,
    };
    let (act_min, act_max) = activation_range(act, yq.0, yq.1);
    let q = if adds {
        let p = QuantAddParams::from_scales(xq, bq, yq, act_min, act_max);
        let shifts = [p.a_shift, p.b_shift, p.y_shift];
        if shifts.iter().any(|s| !(MIN_SHIFT..=MAX_SHIFT).contains(s)) {
            return None;
        }
        QuantOp::Add(p)
    } else {
        let p = QuantMulParams::from_scales(xq, bq, yq, act_min, act_max);
        if !(MIN_SHIFT..=MAX_SHIFT).contains(&p.shift) {
            return None;
        }
        QuantOp::Mul(p)
    };
    let b = match other {
        Ok((b, _)) => b,
        Err((c, (values, _))) => {
            let shape = g.tensor(c).shape.clone();
            g.add_constant_of(
                &format!("{}.operand_int8", n.name),
                shape,
                ConstData::I64(values),
                DType::I8,
            )
        }
    };
    Some((Op::Quant(q), vec![x, b]))
}

/// Max or Min of a dequantized tensor and a finite scalar f32 constant (a bound written out, `max(x,
/// 0)`, `min(x, 6)`), on either side: an element-wise function of the tensor, run as its 256-entry
/// table (QuantLut), which gives what the float op and then the Quantize give, exactly.
fn bound_by_constant(
    g: &mut Graph,
    n: &Node,
    op: BinaryOp,
    act: Activation,
    y: &QuantizeParams,
) -> Option<(Op, Vec<TensorId>)> {
    if act != Activation::None {
        return None;
    }
    let (a, b) = (*n.inputs.first()?, *n.inputs.get(1)?);
    let ((x, xq), c) = match (dequantized(g, a), dequantized(g, b)) {
        (Some(x), None) => (x, g.const_f32(b)?),
        (None, Some(x)) => (x, g.const_f32(a)?),
        _ => return None,
    };
    let c = match c {
        [c] if c.is_finite() => *c,
        _ => return None,
    };
    let x_params = DequantizeParams {
        scale: xq.0,
        zero_point: xq.1,
    };
    let entries = lut::table(&x_params, y, |x, out| {
        for (o, &v) in out.data.iter_mut().zip(x.data) {
            *o = if op == BinaryOp::Max {
                v.max(c)
            } else {
                v.min(c)
            };
        }
    });
    let table = g.add_constant_of(
        &format!("{}.table", n.name),
        vec![lut::TABLE_LEN],
        ConstData::I64(entries.iter().map(|&v| v.into()).collect()),
        DType::I8,
    );
    Some((
        Op::Quant(QuantOp::Lut {
            function: op.name(),
        }),
        vec![x, table],
    ))
}

/// `Div(Mul(a, b), c)`, `a` and `b` dequantized, the product read by nothing else and `c` a positive
/// scalar constant (HardSwish written out: `x * relu6(x + 3) / 6`), as one QuantMul whose output
/// scale takes the division: `a b / c` quantized with scale `s` is `a b` quantized with `s c`. The
/// product is rounded once instead of twice (PTQ gives it no pair of its own for this).
fn fuse_scaled_product(
    g: &Graph,
    n: &Node,
    act: Activation,
    yq: Affine,
) -> Option<(Op, Vec<TensorId>)> {
    let c = match g.const_f32(*n.inputs.get(1)?)? {
        [c] if c.is_finite() && *c > 0.0 => *c,
        _ => return None,
    };
    let product = *n.inputs.first()?;
    if g.is_kept(product) || g.use_count(product) != 1 {
        return None;
    }
    let m = &g.nodes[g.producer(product)?];
    let Op::Binary {
        op: BinaryOp::Mul,
        act: Activation::None,
    } = m.op
    else {
        return None;
    };
    let (a, aq) = dequantized(g, *m.inputs.first()?)?;
    let (b, bq) = dequantized(g, *m.inputs.get(1)?)?;
    let (act_min, act_max) = activation_range(act, yq.0, yq.1);
    let p = QuantMulParams::from_scales(aq, bq, (yq.0 * c, yq.1), act_min, act_max);
    if !(MIN_SHIFT..=MAX_SHIFT).contains(&p.shift) {
        return None;
    }
    Some((Op::Quant(QuantOp::Mul(p)), vec![a, b]))
}

/// A constant operand's values as int8, per tensor, asymmetric over their range with 0 in it (as
/// TFLite's converter quantizes a constant input of ADD or MUL): `(values, (scale, zero_point))`, or
/// `None` if a value is not finite. A single value (or all equal) is the end of its range, so it is
/// exact.
fn quantize_constant(values: impl Iterator<Item = f32>) -> Option<(Vec<i64>, Affine)> {
    let values: Vec<f32> = values.collect();
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let (lo, hi) = values
        .iter()
        .fold((0.0f32, 0.0f32), |(l, h), &v| (l.min(v), h.max(v)));
    let scale = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
    let zero_point = (-128.0 - lo / scale).round().clamp(-128.0, 127.0) as i8;
    let q = values
        .iter()
        .map(|&v| ((v / scale).round() + f32::from(zero_point)).clamp(-128.0, 127.0) as i64)
        .collect();
    Some((q, (scale, zero_point)))
}

/// Per-tensor int8 `(scale, zero_point)`.
type Affine = (f32, i8);

/// The int8 value that dequantizes to exactly `v` with parameters `q`, if there is one.
fn exact_int8(v: f32, (scale, zero_point): Affine) -> Option<i8> {
    let q = (v / scale).round_ties_even() + f32::from(zero_point);
    let q = i8::try_from(q as i32).ok()?;
    ((f32::from(q) - f32::from(zero_point)) * scale == v).then_some(q)
}

/// `(int8 input, its parameters)` when `t` is the output of an int8 Dequantize.
fn dequantized(g: &Graph, t: TensorId) -> Option<(TensorId, Affine)> {
    let n = &g.nodes[g.producer(t)?];
    match &n.op {
        Op::Quant(QuantOp::Dequantize(p)) => Some((n.inputs[0], (p.scale, p.zero_point))),
        _ => None,
    }
}

/// `(index, parameters)` of the only reader of `t` when it is an int8 Quantize and `t` no graph output.
fn quantized_by(g: &Graph, t: TensorId) -> Option<(usize, QuantizeParams)> {
    if g.is_kept(t) || g.use_count(t) != 1 {
        return None;
    }
    let idx = g.nodes.iter().position(|n| n.inputs.contains(&t))?;
    match &g.nodes[idx].op {
        Op::Quant(QuantOp::Quantize(p)) => Some((idx, *p)),
        _ => None,
    }
}

/// The first rewrite found: `(node index, its replacement nodes, index of a node to remove)`.
fn find(g: &mut Graph) -> Option<(usize, Vec<Node>, Option<usize>)> {
    for idx in 0..g.nodes.len() {
        if let Some(r) = sink_dequantize(g, idx) {
            return Some((idx, r, None));
        }
        if let Some((r, remove)) = hoist_quantize(g, idx) {
            return Some((idx, r, Some(remove)));
        }
        let n = &g.nodes[idx];
        // Dequantize -> Quantize.
        if let Op::Quant(QuantOp::Quantize(p)) = &n.op {
            if let Some((x, xq)) = dequantized(g, n.inputs[0]) {
                let yq = (p.scale, p.zero_point);
                let op = if xq == yq {
                    Op::Reshape {
                        shape: g.tensor(x).shape.clone(),
                    }
                } else {
                    let r = RequantizeParams::from_scales(xq, yq);
                    if !(MIN_SHIFT..=MAX_SHIFT).contains(&r.shift) || r.multiplier < 0 {
                        continue;
                    }
                    Op::Quant(QuantOp::Requantize(r))
                };
                let fused = Node {
                    name: n.name.clone(),
                    onnx_op: n.onnx_op.clone(),
                    op,
                    inputs: vec![x],
                    output: n.output,
                };
                return Some((idx, vec![fused], None));
            }
            continue;
        }
        let Some((q_idx, y)) = quantized_by(g, n.output) else {
            continue;
        };
        let yq = (y.scale, y.zero_point);
        let q = &g.nodes[q_idx];
        // An importer that names both after one source op (TFLite's) gets that name once.
        let name = if n.name == q.name {
            n.name.clone()
        } else {
            format!("{}+{}", n.name, q.name)
        };
        let output = q.output;
        let n = n.clone();
        let Some((op, inputs)) = fuse(g, &n, &y) else {
            continue;
        };
        // A pool whose input and output parameters differ: the pool in the input's, then a
        // Requantize to the output's.
        let xq = n
            .inputs
            .first()
            .and_then(|&t| dequantized(g, t))
            .map(|(_, q)| q);
        let requantize = match (&op, xq) {
            (Op::Quant(QuantOp::MaxPool { .. } | QuantOp::AvgPool { .. }), Some(xq))
                if xq != yq =>
            {
                let r = RequantizeParams::from_scales(xq, yq);
                if r.multiplier < 0 || !(MIN_SHIFT..=MAX_SHIFT).contains(&r.shift) {
                    continue;
                }
                Some((xq, r))
            }
            _ => None,
        };
        let onnx_op = n.onnx_op.clone();
        let fused = match requantize {
            None => vec![Node {
                name,
                onnx_op,
                op,
                inputs,
                output,
            }],
            Some((xq, r)) => {
                let shape = g.tensor(output).shape.clone();
                let mid = g.add_activation_of(&format!("{}.int8", n.name), shape, DType::I8);
                g.tensor_mut(mid).quant = Some(crate::ir::quant::Quant::per_tensor(xq.0, xq.1));
                vec![
                    Node {
                        name: n.name.clone(),
                        onnx_op: onnx_op.clone(),
                        op,
                        inputs,
                        output: mid,
                    },
                    Node {
                        name,
                        onnx_op,
                        op: Op::Quant(QuantOp::Requantize(r)),
                        inputs: vec![mid],
                        output,
                    },
                ]
            }
        };
        return Some((idx, fused, Some(q_idx)));
    }
    None
}

/// The int8 op and inputs for float node `n` whose output is quantized with `y`, if it fuses.
fn fuse(g: &mut Graph, n: &Node, y: &QuantizeParams) -> Option<(Op, Vec<TensorId>)> {
    let yq = (y.scale, y.zero_point);
    if let Op::Binary { op, act } = &n.op {
        if matches!(op, BinaryOp::Max | BinaryOp::Min) {
            return bound_by_constant(g, n, *op, *act, y);
        }
        return fuse_binary(g, n, *op, *act, yq);
    }
    let (x, xq) = dequantized(g, *n.inputs.first()?)?;
    let range = |act: Activation| activation_range(act, yq.0, yq.1);
    match &n.op {
        Op::Conv2d(c) => {
            let (act_min, act_max) = range(c.act);
            let inputs = weighted(g, n, x, xq, yq)?;
            let conv = crate::ir::op::Conv2d {
                act: Activation::None,
                ..*c
            };
            let op = QuantOp::Conv2d {
                conv,
                x_zero_point: xq.1,
                y_zero_point: yq.1,
                act_min,
                act_max,
            };
            Some((Op::Quant(op), inputs))
        }
        Op::FullyConnected { act } => {
            let (act_min, act_max) = range(*act);
            let inputs = weighted(g, n, x, xq, yq)?;
            let p = QuantFullyConnectedParams {
                x_zero_point: xq.1,
                y_zero_point: yq.1,
                act_min,
                act_max,
                // Set when the graph is lowered (`ConvertOptions::rounding`).
                rounding: RequantRounding::Double,
            };
            Some((Op::Quant(QuantOp::FullyConnected(p)), inputs))
        }
        Op::MaxPool(p) => {
            let op = QuantOp::MaxPool {
                pool: *p,
                act_min: i8::MIN,
                act_max: i8::MAX,
            };
            Some((Op::Quant(op), vec![x]))
        }
        Op::AvgPool(p) => {
            let op = QuantOp::AvgPool {
                pool: *p,
                zero_point: xq.1,
                act_min: i8::MIN,
                act_max: i8::MAX,
            };
            Some((Op::Quant(op), vec![x]))
        }
        Op::GlobalAvgPool { layout } => {
            // An average pool whose window is the whole image.
            let (h, w) = match (g.tensor(x).shape.as_slice(), layout) {
                ([_, _, h, w], SpatialLayout::Nchw) | ([_, h, w, _], SpatialLayout::Nhwc) => {
                    (*h, *w)
                }
                _ => return None,
            };
            let pool = Pool2d {
                kernel: [h, w],
                strides: [1, 1],
                pads: [0; 4],
                count_include_pad: false,
                layout: *layout,
            };
            let op = QuantOp::AvgPool {
                pool,
                zero_point: xq.1,
                act_min: i8::MIN,
                act_max: i8::MAX,
            };
            Some((Op::Quant(op), vec![x]))
        }
        Op::Softmax { axis } if yq == (1.0 / 256.0, -128) => {
            let shape = &g.tensor(x).shape;
            // The int8 kernel sums the lane in fixed point with room for `MAX_AXIS_LEN` terms; a longer
            // axis (an OCR head's 6,625 characters) stays a float Softmax between its Dequantize and
            // Quantize.
            if *axis + 1 != shape.len() || shape[*axis] > softmax::MAX_AXIS_LEN {
                return None;
            }
            let p = QuantSoftmaxParams::from_scale(1.0, xq.0.into(), u8::try_from(*axis).ok()?);
            Some((Op::Quant(QuantOp::Softmax(p)), vec![x]))
        }
        Op::Unary(op) => {
            // The float op's own kernel on the 256 dequantized values, quantized as the Quantize
            // does (its rounding included): the int8 op gives the float path's values exactly.
            let p = UnaryParams { op: *op };
            let x_params = DequantizeParams {
                scale: xq.0,
                zero_point: xq.1,
            };
            let entries = lut::table(&x_params, y, |x, out| unary::unary(&p, x, out));
            let table = g.add_constant_of(
                &format!("{}.table", n.name),
                vec![lut::TABLE_LEN],
                ConstData::I64(entries.iter().map(|&v| v.into()).collect()),
                DType::I8,
            );
            let function = op.name();
            Some((Op::Quant(QuantOp::Lut { function }), vec![x, table]))
        }
        Op::Reshape { .. } | Op::Transpose { .. } | Op::Concat { .. } if xq == yq => {
            let mut inputs = vec![x];
            for &t in &n.inputs[1..] {
                match dequantized(g, t) {
                    Some((i, iq)) if iq == yq => inputs.push(i),
                    _ => return None,
                }
            }
            Some((n.op.clone(), inputs))
        }
        _ => None,
    }
}

/// The inputs `x, w (int8), requant rows[, bias (int32)]` of an int8 Conv2d or FullyConnected
/// made from float node `n` (`x, w[, b]`), or `None` when the weights are not symmetric int8 or a
/// multiplier is out of range.
fn weighted(g: &mut Graph, n: &Node, x: TensorId, xq: Affine, yq: Affine) -> Option<Vec<TensorId>> {
    let wt = g.tensor(*n.inputs.get(1)?).clone();
    let (Some(ConstData::F32(w)), Some(wq)) = (&wt.data, &wt.quant) else {
        return None;
    };
    let oc = *wt.shape.first()?;
    let per_channel = wq.scales.len() != 1;
    if wq.dtype != DType::I8
        || wq.zero_points.iter().any(|&z| z != 0)
        || (per_channel && (wq.axis != 0 || wq.scales.len() != oc))
    {
        return None;
    }
    let scale = |c: usize| wq.scales[if per_channel { c } else { 0 }];
    let inner = w.len() / oc.max(1);
    let mut q8 = Vec::with_capacity(w.len());
    for (i, &v) in w.iter().enumerate() {
        let q = (f64::from(v) / f64::from(scale(i / inner))).round();
        if !(-128.0..=127.0).contains(&q) {
            return None;
        }
        q8.push(q as i64);
    }
    let rows_n = if per_channel { oc } else { 1 };
    let mut rows = Vec::with_capacity(rows_n * 2);
    for c in 0..rows_n {
        let (m, s) = channel_multiplier(xq.0, scale(c), yq.0);
        if m < 0 || !(MIN_SHIFT..=MAX_SHIFT).contains(&s) {
            return None;
        }
        rows.extend([i64::from(m), i64::from(s)]);
    }
    let mut bias = None;
    if let Some(&b) = n.inputs.get(2) {
        let bv = g.const_f32(b)?;
        let mut values = Vec::with_capacity(oc);
        for (c, &v) in bv.iter().enumerate() {
            let q = (f64::from(v) / (f64::from(xq.0) * f64::from(scale(c)))).round();
            if !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&q) {
                return None;
            }
            values.push(q as i64);
        }
        bias = Some(values);
    }
    let w8 = g.add_constant_of(
        &format!("{}.weights_int8", n.name),
        wt.shape.clone(),
        ConstData::I64(q8),
        DType::I8,
    );
    let rq = g.add_constant_of(
        &format!("{}.requant", n.name),
        vec![rows_n, 2],
        ConstData::I64(rows),
        DType::I32,
    );
    let mut inputs = vec![x, w8, rq];
    if let Some(values) = bias {
        let b = g.add_constant_of(
            &format!("{}.bias_int32", n.name),
            vec![oc],
            ConstData::I64(values),
            DType::I32,
        );
        inputs.push(b);
    }
    Some(inputs)
}
