//! ONNX `QLinearConv` (2-D), imported as its QDQ form: `x` and `w` dequantized (the weights at
//! conversion time, keeping their int8 values and scales), a float Conv, the int32 bias `B` as a float
//! constant of scale `x_scale * w_scale`, and a QuantizeLinear of the result. The QDQ pass then makes it
//! one int8 convolution when the weights are symmetric int8 (`w_zero_point` 0); otherwise (uint8
//! weights, or a non-zero weight zero point) it stays a float convolution between a Dequantize and a
//! Quantize, with a notice in the report (results then match ONNX's integer arithmetic within one
//! step of the output where float rounding differs); the import reports it in a notice.

use crate::ir::quant::Quant;
use crate::ir::{ConstData, DType};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::nn::conv::conv_op;
use crate::ConvertError;

use super::QLinearInputs;

/// Imports `QLinearConv`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let q = QLinearInputs::read(ctx, ["x", "w"])?;
    let b = ctx.opt_input(8)?;
    let (xs, ws) = (ctx.shape(q.a.x), ctx.shape(q.b.x));
    if xs.len() != 4 || ws.len() != 4 {
        return Err(ctx.err(format!(
            "x {xs:?} and w {ws:?} must have rank 4; only 2-D QLinearConv is supported"
        )));
    }
    let xf = q.a.dequantize(ctx, 1)?;
    let wf = q.b.dequantize(ctx, 0)?;
    if !ctx.graph().is_const(wf) {
        return Err(ctx.err("the weights w must be constants (initializers); Ember resolves them at conversion time"));
    }
    let wq = ctx.graph().tensor(wf).quant.clone();
    let mut inputs = vec![xf, wf];
    if let Some(b) = b {
        inputs.push(bias(ctx, b, q.a.scale, wq.as_ref(), ws[0])?);
    }
    let op = conv_op(ctx, &xs, &ws)?;
    let yf = ctx.emit_tmp("conv", op, inputs)?;
    q.finish(ctx, yf)
}

/// The int32 bias `b` as a FLOAT constant `b * x_scale * w_scale[c]`, carrying its quantization.
fn bias(
    ctx: &mut NodeCtx<'_>,
    b: crate::ir::TensorId,
    x_scale: crate::ir::TensorId,
    wq: Option<&Quant>,
    channels: usize,
) -> Result<crate::ir::TensorId, ConvertError> {
    let bt = ctx.graph().tensor(b);
    let (Some(ConstData::I64(bv)), DType::I32) = (&bt.data, bt.dtype) else {
        return Err(ctx.err("the bias B must be an INT32 constant"));
    };
    let bv = bv.clone();
    let xs = ctx.const_scalar(x_scale, "x_scale")?;
    let Some(wq) = wq else {
        return Err(ctx.err("w_scale must be a constant"));
    };
    if bv.len() != channels || !(wq.scales.len() == 1 || wq.scales.len() == channels) {
        return Err(ctx.err(format!(
            "bias B has {} values and w_scale {}; both must match the {channels} output channels",
            bv.len(),
            wq.scales.len()
        )));
    }
    let scales: Vec<f32> = (0..channels)
        .map(|c| xs * wq.scales[if wq.scales.len() == 1 { 0 } else { c }])
        .collect();
    let values = bv
        .iter()
        .zip(&scales)
        .map(|(&v, &s)| v as f32 * s)
        .collect();
    let id = ctx.add_constant("bias", vec![channels], ConstData::F32(values));
    ctx.imp.graph.tensor_mut(id).quant = Some(Quant {
        scales,
        zero_points: vec![0; channels],
        axis: 0,
        dtype: DType::I32,
    });
    Ok(id)
}
