//! ONNX `ConvInteger` (2-D): `y = conv(x - x_zero_point, w - w_zero_point)` in int32, of int8 or
//! uint8 `x` and constant `w`.
//!
//! Lowered exactly in float32: `x` is cast to FLOAT and its zero point subtracted, the weights minus
//! their zero points (per tensor or per output channel) become FLOAT constants, a float convolution
//! sums the products, and a Cast gives INT32. Every product and partial sum is an integer, exact in
//! float32 while its magnitude stays below 2^24; the converter checks that bound with the largest
//! weight magnitude and the largest input magnitude (255) over the taps of one output, and rejects
//! the node otherwise (up to 258 taps of full-range weights always pass).

use ember_core::ops::math::activation::Activation;

use crate::ir::{ConstData, DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::nn::conv::conv_op;
use crate::ConvertError;

/// The largest integer below which every float32 sum of integers is exact.
pub const EXACT_F32: f64 = 16_777_216.0;

/// Imports `ConvInteger`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let [(x, x_zp), (w, w_zp)] = integer_operands(ctx, ["x", "w"])?;
    let (xs, ws) = (ctx.shape(x), ctx.shape(w));
    if xs.len() != 4 || ws.len() != 4 {
        return Err(ctx.err(format!(
            "x {xs:?} and w {ws:?} must have rank 4; only 2-D ConvInteger is supported"
        )));
    }
    let xf = centered(ctx, x, x_zp, "x")?;
    let (wv, wmax) = centered_weights(ctx, w, w_zp, 0)?;
    let taps = ws[1..].iter().map(|&d| d as f64).product::<f64>();
    if taps * 255.0 * wmax >= EXACT_F32 {
        return Err(ctx.err(format!(
            "{taps} taps of weights up to {wmax} may sum past 2^24, where Ember's float32 lowering \
             of ConvInteger is no longer exact; such a convolution is not supported"
        )));
    }
    let wf = ctx.add_constant("weights", ws.clone(), ConstData::F32(wv));
    let op = conv_op(ctx, &xs, &ws)?;
    let yf = ctx.emit_tmp("conv", op, vec![xf, wf])?;
    finish_int32(ctx, yf)
}

/// The two operands of an integer op (`ConvInteger`, `MatMulInteger`), named `names` in the spec,
/// each with its optional zero point (inputs 2 and 3).
pub fn integer_operands(
    ctx: &NodeCtx<'_>,
    names: [&str; 2],
) -> Result<[(TensorId, Option<TensorId>); 2], ConvertError> {
    let (a, b) = (ctx.input(0, names[0])?, ctx.input(1, names[1])?);
    Ok([(a, ctx.opt_input(2)?), (b, ctx.opt_input(3)?)])
}

/// The float result `yf` of an integer op, exact, cast to the node's INT32 output.
pub fn finish_int32(ctx: &mut NodeCtx<'_>, yf: TensorId) -> Result<(), ConvertError> {
    let y = ctx.emit_tmp("int32", Op::Cast { to: DType::I32 }, vec![yf])?;
    ctx.finish(y)
}

/// FLOAT `x - zp` of an int8 or uint8 runtime tensor and its scalar zero point (a constant, or a
/// tensor of one element computed at run time).
pub fn centered(
    ctx: &mut NodeCtx<'_>,
    x: TensorId,
    zp: Option<TensorId>,
    what: &str,
) -> Result<TensorId, ConvertError> {
    let d = ctx.graph().tensor(x).dtype;
    if !matches!(d, DType::I8 | DType::U8) {
        return Err(ctx.err(format!(
            "{what} has element type {}; int8 and uint8 are supported",
            d.name()
        )));
    }
    let xf = ctx.emit_tmp(
        &format!("{what}_float"),
        Op::Cast { to: DType::F32 },
        vec![x],
    )?;
    let Some(zp) = zp else { return Ok(xf) };
    let n = crate::ir::shape::numel(&ctx.shape(zp)).map_err(|e| ctx.err(e))?;
    if n != 1 {
        return Err(ctx.err(format!(
            "the zero point of {what} has {n} values; only a per-tensor zero point is supported"
        )));
    }
    let zf = match &ctx.graph().tensor(zp).data {
        Some(ConstData::I64(v)) => {
            let v = v[0] as f32;
            ctx.add_constant(
                &format!("{what}_zero_point"),
                vec![1],
                ConstData::F32(vec![v]),
            )
        }
        _ => {
            let z = ctx.emit_tmp(
                &format!("{what}_zero_point"),
                Op::Cast { to: DType::F32 },
                vec![zp],
            )?;
            ctx.emit_tmp(
                &format!("{what}_zero_point_1"),
                Op::Reshape { shape: vec![1] },
                vec![z],
            )?
        }
    };
    let op = Op::Binary {
        op: ember_core::ops::math::binary::BinaryOp::Sub,
        act: Activation::None,
    };
    ctx.emit_tmp(&format!("{what}_centered"), op, vec![xf, zf])
}

/// The constant int8/uint8 weights minus their zero points (one, or one per index of `axis`) as
/// floats, and the largest magnitude among them.
pub fn centered_weights(
    ctx: &NodeCtx<'_>,
    w: TensorId,
    zp: Option<TensorId>,
    axis: usize,
) -> Result<(Vec<f32>, f64), ConvertError> {
    let t = ctx.graph().tensor(w);
    let (Some(ConstData::I64(v)), DType::I8 | DType::U8) = (&t.data, t.dtype) else {
        return Err(ctx.err(format!(
            "the weights (\"{}\") must be an int8 or uint8 constant (an initializer); Ember resolves \
             them at conversion time",
            t.name
        )));
    };
    let zps: Vec<i64> = match zp {
        None => vec![0],
        Some(z) => match &ctx.graph().tensor(z).data {
            Some(ConstData::I64(z)) => z.clone(),
            _ => return Err(ctx.err("the weights' zero point must be a constant")),
        },
    };
    let channels = t.shape.get(axis).copied().unwrap_or(1);
    if zps.len() != 1 && zps.len() != channels {
        return Err(ctx.err(format!(
            "{} weight zero points for {channels} channels (one, or one per channel)",
            zps.len()
        )));
    }
    let inner: usize = t.shape[axis + 1..].iter().product::<usize>().max(1);
    let mut max = 0f64;
    let values = v
        .iter()
        .enumerate()
        .map(|(i, &q)| {
            let c = if zps.len() == 1 {
                0
            } else {
                (i / inner) % channels
            };
            let d = q - zps[c];
            max = max.max(d.unsigned_abs() as f64);
            d as f32
        })
        .collect();
    Ok((values, max))
}
