//! Importers of ONNX's quantization ops: `QuantizeLinear`, `DequantizeLinear`, `QLinearConv`,
//! `QLinearMatMul`, `ConvInteger` and `MatMulInteger`, and the helpers they share.
//!
//! Three ways a (de)quantization is imported (see docs/quantization.md):
//! - **int8 edge**: constant per-tensor scale and zero point, int8 or uint8 values: an IR
//!   [`QuantOp::Quantize`] / [`QuantOp::Dequantize`] on int8. uint8 maps exactly onto int8: values
//!   and zero point minus 128 (a wrapping uint8 Add of 128 and a Cast at run time).
//! - **constant**: a DequantizeLinear of a constant is a FLOAT constant carrying the int8 values'
//!   [`Quant`] (per tensor or per axis), so the QDQ pass (`passes::qdq`) can give an int8 op the
//!   model's own weights.
//! - **float**: anything else (per-axis activations, int16/uint16/int32 values, scales computed at run
//!   time) is ONNX's own arithmetic in float32: `(float(x) - float(zp)) * scale`, and
//!   `clip(rint(x / scale) + zp)` cast to the output type. Exact, as ONNX's reference computes it.
//!
//! `QLinearConv` and `QLinearMatMul` are imported as their QDQ form (dequantize, float op, quantize),
//! which the QDQ pass turns into the int8 op when the weights are symmetric int8.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/onnx/ops/quant");

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::quant::dequantize::DequantizeParams;
use ember_core::ops::quant::quantize::{QuantizeParams, Rounding};

use crate::ir::quant::{Quant, QuantOp};
use crate::ir::{ConstData, DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// The inputs of a QLinear op over two operands (`QLinearConv`, `QLinearMatMul`), in ONNX's order:
/// each operand with its scale and zero point, then the output's scale and zero point.
struct QLinearInputs<'n> {
    /// The first operand (inputs 0 to 2).
    a: QLinearOperand<'n>,
    /// The second operand (inputs 3 to 5).
    b: QLinearOperand<'n>,
    /// `y_scale` (input 6).
    y_scale: TensorId,
    /// `y_zero_point` (input 7).
    y_zero_point: TensorId,
}

/// A quantized operand of a QLinear op: its values, scale and zero point.
struct QLinearOperand<'n> {
    x: TensorId,
    scale: TensorId,
    zero_point: TensorId,
    /// Its name in the spec (`a`, `x`, ...), which also names its scale and zero point.
    name: &'n str,
}

impl<'n> QLinearInputs<'n> {
    /// Reads the eight inputs; `names` are the operands' names in the spec.
    fn read(ctx: &NodeCtx<'_>, names: [&'n str; 2]) -> Result<Self, ConvertError> {
        Ok(QLinearInputs {
            a: QLinearOperand::read(ctx, 0, names[0])?,
            b: QLinearOperand::read(ctx, 3, names[1])?,
            y_scale: ctx.input(6, "y_scale")?,
            y_zero_point: ctx.input(7, "y_zero_point")?,
        })
    }

    /// The float result `yf` quantized to the output's type, as the node's output.
    fn finish(&self, ctx: &mut NodeCtx<'_>, yf: TensorId) -> Result<(), ConvertError> {
        let dtype = ctx.graph().tensor(self.y_zero_point).dtype;
        let y = quantize(ctx, yf, self.y_scale, Some(self.y_zero_point), dtype, 1)?;
        ctx.finish(y)
    }
}

impl<'n> QLinearOperand<'n> {
    /// The operand whose values are input `first`, its scale and zero point the next two.
    fn read(ctx: &NodeCtx<'_>, first: usize, name: &'n str) -> Result<Self, ConvertError> {
        Ok(QLinearOperand {
            x: ctx.input(first, name)?,
            scale: ctx.input(first + 1, &format!("{name}_scale"))?,
            zero_point: ctx.input(first + 2, &format!("{name}_zero_point"))?,
            name,
        })
    }

    /// The operand dequantized (per axis along `axis`); see [`dequantize`].
    fn dequantize(&self, ctx: &mut NodeCtx<'_>, axis: usize) -> Result<TensorId, ConvertError> {
        dequantize(
            ctx,
            self.x,
            self.scale,
            Some(self.zero_point),
            axis,
            self.name,
        )
    }
}

/// A scale or zero point input: constant values, or a tensor computed at run time.
enum Param {
    Const(Vec<f64>),
    Runtime(TensorId),
}

fn binary(op: BinaryOp) -> Op {
    Op::Binary {
        op,
        act: Activation::None,
    }
}

/// The scale input `id`: FLOAT, or a FLOAT16 constant.
fn scale_param(ctx: &NodeCtx<'_>, id: TensorId, what: &str) -> Result<Param, ConvertError> {
    let t = ctx.graph().tensor(id);
    // A float16 constant is held as its (exact) f32 values.
    let const_f16 = t.dtype == DType::F16 && t.data.is_some();
    if t.dtype != DType::F32 && !const_f16 {
        return Err(ctx.err(format!(
            "{what} (\"{}\") is {}; only FLOAT scales (or FLOAT16 constants) are supported",
            t.name,
            t.dtype.name()
        )));
    }
    Ok(match ctx.const_f32(id) {
        Some(v) => Param::Const(v.iter().map(|&s| f64::from(s)).collect()),
        None if const_f16 => {
            return Err(ctx.err(format!("{what} (\"{}\"): unreadable FLOAT16 data", t.name)))
        }
        None => Param::Runtime(id),
    })
}

/// The zero-point input `id` (integer values).
fn zero_point_param(ctx: &NodeCtx<'_>, id: TensorId) -> Param {
    match &ctx.graph().tensor(id).data {
        Some(ConstData::I64(v)) => Param::Const(v.iter().map(|&z| z as f64).collect()),
        Some(ConstData::F32(v)) => Param::Const(v.iter().map(|&z| f64::from(z)).collect()),
        None => Param::Runtime(id),
    }
}

/// The resolved `axis` attribute (default 1) for a tensor of `rank` (`rank` when out of range), and
/// rejects blocked quantization.
fn axis_attr(ctx: &NodeCtx<'_>, rank: usize) -> Result<usize, ConvertError> {
    if ctx.attr_int("block_size")?.unwrap_or(0) != 0 {
        return Err(ctx.err("blocked quantization (block_size) is not supported"));
    }
    let axis = ctx.attr_int("axis")?.unwrap_or(1);
    let r = rank as i64;
    let resolved = if axis < 0 { axis + r } else { axis };
    if rank == 0 {
        return Ok(0);
    }
    // Per-tensor parameters ignore the axis; per-axis ones are checked against it
    // (`axis_shape`), so an out-of-range axis becomes `rank`, which no dim has.
    Ok(usize::try_from(resolved)
        .ok()
        .filter(|&a| a < rank)
        .unwrap_or(rank))
}

/// The integer range of a quantized type.
fn int_range(d: DType) -> Option<(i64, i64)> {
    Some(match d {
        DType::I8 => (-128, 127),
        DType::U8 => (0, 255),
        DType::I16 => (-32768, 32767),
        DType::U16 => (0, 65535),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => return None,
    })
}

/// Shape `[C, 1, ..]` that broadcasts a per-axis parameter of `c` values along `axis` of a tensor of
/// rank `rank`; `None` for a per-tensor one.
fn axis_shape(
    ctx: &NodeCtx<'_>,
    c: usize,
    axis: usize,
    x: &[usize],
) -> Result<Vec<usize>, ConvertError> {
    if c == 1 {
        return Ok(vec![1]);
    }
    if x.get(axis) != Some(&c) {
        return Err(ctx.err(format!(
            "{c} per-axis parameters do not match axis {axis} of {x:?}"
        )));
    }
    let mut s = vec![c];
    s.extend(std::iter::repeat_n(1, x.len() - axis - 1));
    Ok(s)
}

/// A FLOAT tensor of a parameter, broadcastable against `x` along `axis`.
fn float_param(
    ctx: &mut NodeCtx<'_>,
    p: &Param,
    suffix: &str,
    axis: usize,
    x: &[usize],
) -> Result<TensorId, ConvertError> {
    match p {
        Param::Const(v) => {
            let shape = axis_shape(ctx, v.len(), axis, x)?;
            let data = v.iter().map(|&f| f as f32).collect();
            Ok(ctx.add_constant(suffix, shape, ConstData::F32(data)))
        }
        Param::Runtime(id) => {
            let id = *id;
            let n = crate::ir::shape::numel(&ctx.shape(id)).map_err(|e| ctx.err(e))?;
            let shape = axis_shape(ctx, n, axis, x)?;
            let f = if ctx.graph().tensor(id).dtype == DType::F32 {
                id
            } else {
                ctx.emit_tmp(
                    &format!("{suffix}_float"),
                    Op::Cast { to: DType::F32 },
                    vec![id],
                )?
            };
            if ctx.shape(f) == shape {
                Ok(f)
            } else {
                ctx.emit_tmp(&format!("{suffix}_shaped"), Op::Reshape { shape }, vec![f])
            }
        }
    }
}

/// Int8 view of a uint8 or int8 runtime tensor: uint8 values minus 128 (a wrapping Add of 128, then a
/// Cast), int8 as is.
fn to_int8(ctx: &mut NodeCtx<'_>, x: TensorId) -> Result<TensorId, ConvertError> {
    if ctx.graph().tensor(x).dtype == DType::I8 {
        return Ok(x);
    }
    let name = format!("{}.u8_offset", ctx.name);
    let k = ctx
        .imp
        .graph
        .add_constant_of(&name, vec![1], ConstData::I64(vec![128]), DType::U8);
    let moved = ctx.emit_tmp("u8_minus_128", binary(BinaryOp::Add), vec![x, k])?;
    ctx.emit_tmp("as_int8", Op::Cast { to: DType::I8 }, vec![moved])
}

/// The uint8 values of int8 `y` plus 128 (a Cast, then a wrapping Add of 128).
fn to_uint8(ctx: &mut NodeCtx<'_>, y: TensorId) -> Result<TensorId, ConvertError> {
    let cast = ctx.emit_tmp("as_uint8", Op::Cast { to: DType::U8 }, vec![y])?;
    let name = format!("{}.u8_offset", ctx.name);
    let k = ctx
        .imp
        .graph
        .add_constant_of(&name, vec![1], ConstData::I64(vec![128]), DType::U8);
    ctx.emit_tmp("u8_plus_128", binary(BinaryOp::Add), vec![cast, k])
}

/// `(scale, zero point)` of a constant per-tensor int8/uint8 quantization, the zero point moved to
/// int8.
fn int8_scalar(scale: &Param, zp: &Param, dtype: DType) -> Option<(f32, i8)> {
    let (Param::Const(s), Param::Const(z)) = (scale, zp) else {
        return None;
    };
    let (&[s], &[z]) = (s.as_slice(), z.as_slice()) else {
        return None;
    };
    let z = match dtype {
        DType::I8 => z,
        DType::U8 => z - 128.0,
        _ => return None,
    };
    let s = s as f32;
    (s.is_finite() && s > 0.0 && (-128.0..=127.0).contains(&z)).then_some((s, z as i8))
}

/// Dequantizes `x` (`(x - zp) * scale`, along `axis` when per axis): a FLOAT constant with its
/// [`Quant`] for a constant `x`, an int8 Dequantize for int8/uint8 with constant per-tensor
/// parameters, ONNX's float arithmetic otherwise. `zp: None` is zero.
pub fn dequantize(
    ctx: &mut NodeCtx<'_>,
    x: TensorId,
    scale: TensorId,
    zp: Option<TensorId>,
    axis: usize,
    what: &str,
) -> Result<TensorId, ConvertError> {
    let xt = ctx.graph().tensor(x).clone();
    let dtype = xt.dtype;
    if int_range(dtype).is_none() {
        return Err(ctx.err(format!(
            "{what} (\"{}\") has element type {}; int8, uint8, int16, uint16 and int32 are supported",
            xt.name,
            dtype.name()
        )));
    }
    let s = scale_param(ctx, scale, &format!("the scale of {what}"))?;
    let z = match zp {
        Some(z) => {
            let zt = ctx.graph().tensor(z);
            if zt.dtype != dtype {
                return Err(ctx.err(format!(
                    "the zero point of {what} is {}, the values {}; they must have one type",
                    zt.dtype.name(),
                    dtype.name()
                )));
            }
            zero_point_param(ctx, z)
        }
        None => Param::Const(vec![0.0]),
    };
    // A constant: computed now, with its quantization kept for the QDQ pass.
    if let (Some(ConstData::I64(q)), Param::Const(sv), Param::Const(zv)) = (&xt.data, &s, &z) {
        let n = sv.len();
        if zv.len() != n {
            return Err(ctx.err(format!("{what}: {n} scales but {} zero points", zv.len())));
        }
        let shape = &xt.shape;
        axis_shape(ctx, n, axis, shape)?;
        let inner: usize = if n == 1 {
            q.len().max(1)
        } else {
            shape[axis + 1..].iter().product()
        };
        let values = q
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = if n == 1 { 0 } else { (i / inner) % n };
                (v as f32 - zv[c] as f32) * sv[c] as f32
            })
            .collect();
        let quant = Quant {
            scales: sv.iter().map(|&v| v as f32).collect(),
            zero_points: zv.iter().map(|&v| v as i32).collect(),
            axis: if n == 1 { 0 } else { axis },
            dtype,
        };
        if dtype != DType::I32 && (dtype != DType::I8 || quant.zero_points.iter().any(|&z| z != 0))
        {
            let shown = &quant.zero_points[..quant.zero_points.len().min(4)];
            let notice = format!(
                "node \"{}\" ({}): {} constant with zero point(s) {shown:?} is not symmetric int8; \
                 ops reading it as weights run in float between a Dequantize and a Quantize",
                ctx.name,
                ctx.node.op_type,
                dtype.name()
            );
            ctx.imp.notices.push(notice);
        }
        let id = ctx.add_constant(what, shape.clone(), ConstData::F32(values));
        ctx.imp.graph.tensor_mut(id).quant = Some(quant);
        return Ok(id);
    }
    if let Some((scale, zero_point)) = int8_scalar(&s, &z, dtype).filter(|_| xt.data.is_none()) {
        let x8 = to_int8(ctx, x)?;
        let t = ctx.imp.graph.tensor_mut(x8);
        t.quant.get_or_insert(Quant::per_tensor(scale, zero_point));
        let op = Op::Quant(QuantOp::Dequantize(DequantizeParams { scale, zero_point }));
        return ctx.emit_tmp(&format!("{what}_dequantized"), op, vec![x8]);
    }
    let shape = xt.shape.clone();
    let xf = ctx.emit_tmp(
        &format!("{what}_float"),
        Op::Cast { to: DType::F32 },
        vec![x],
    )?;
    let zf = float_param(ctx, &z, &format!("{what}_zero_point"), axis, &shape)?;
    let centered = ctx.emit_tmp(
        &format!("{what}_centered"),
        binary(BinaryOp::Sub),
        vec![xf, zf],
    )?;
    let sf = float_param(ctx, &s, &format!("{what}_scale"), axis, &shape)?;
    ctx.emit_tmp(
        &format!("{what}_dequantized"),
        binary(BinaryOp::Mul),
        vec![centered, sf],
    )
}

/// Quantizes FLOAT `x` to `dtype` (`clip(rint(x / scale) + zp)`, along `axis` when per axis): an int8
/// Quantize for int8/uint8 with constant per-tensor parameters (then moved to uint8 if needed), ONNX's
/// float arithmetic otherwise.
pub fn quantize(
    ctx: &mut NodeCtx<'_>,
    x: TensorId,
    scale: TensorId,
    zp: Option<TensorId>,
    dtype: DType,
    axis: usize,
) -> Result<TensorId, ConvertError> {
    let xt = ctx.graph().tensor(x).clone();
    if xt.dtype != DType::F32 {
        return Err(ctx.err(format!(
            "the input (\"{}\") is {}; only FLOAT inputs are supported",
            xt.name,
            xt.dtype.name()
        )));
    }
    let Some((lo, hi)) = int_range(dtype).filter(|_| dtype != DType::I32) else {
        return Err(ctx.err(format!(
            "quantizing to element type {} is not supported (int8, uint8, int16, uint16)",
            dtype.name()
        )));
    };
    let s = scale_param(ctx, scale, "the scale")?;
    let z = match zp {
        Some(z) => zero_point_param(ctx, z),
        None => Param::Const(vec![0.0]),
    };
    if let Some((scale, zero_point)) = int8_scalar(&s, &z, dtype) {
        let p = QuantizeParams {
            scale,
            zero_point,
            rounding: Rounding::HalfToEven,
        };
        let q = ctx.emit_tmp("quantized", Op::Quant(QuantOp::Quantize(p)), vec![x])?;
        ctx.imp.graph.tensor_mut(q).quant = Some(Quant::per_tensor(scale, zero_point));
        return if dtype == DType::U8 {
            to_uint8(ctx, q)
        } else {
            Ok(q)
        };
    }
    let shape = xt.shape.clone();
    let sf = float_param(ctx, &s, "scale", axis, &shape)?;
    let scaled = ctx.emit_tmp("scaled", binary(BinaryOp::Div), vec![x, sf])?;
    let mut r = ctx.emit_tmp("rounded", Op::Unary(UnaryOp::Round), vec![scaled])?;
    if zp.is_some() {
        let zf = float_param(ctx, &z, "zero_point", axis, &shape)?;
        r = ctx.emit_tmp("shifted", binary(BinaryOp::Add), vec![r, zf])?;
    }
    let clip = UnaryOp::Clip {
        min: lo as f32,
        max: hi as f32,
    };
    let c = ctx.emit_tmp("saturated", Op::Unary(clip), vec![r])?;
    ctx.emit_tmp("cast", Op::Cast { to: dtype }, vec![c])
}
