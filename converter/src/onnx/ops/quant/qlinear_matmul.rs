//! ONNX `QLinearMatMul`, imported as its QDQ form: `a` and `b` dequantized, a float MatMul (a
//! FullyConnected layer when `b` is a 2-D constant: weights `b^T` keeping their int8 values and
//! scales), and a QuantizeLinear of the result. The QDQ pass makes the FullyConnected layer an int8
//! one when `b` is symmetric int8; anything else runs in float between a Dequantize and a Quantize.

use ember_core::ops::math::activation::Activation;

use crate::ir::quant::Quant;
use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::QLinearInputs;

/// Imports `QLinearMatMul`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let q = QLinearInputs::read(ctx, ["a", "b"])?;
    let (sa, sb) = (ctx.shape(q.a.x), ctx.shape(q.b.x));
    if sa.len() < 2 || sb.len() < 2 {
        return Err(ctx.err(format!(
            "a {sa:?} and b {sb:?} must have rank >= 2 (rank-1 operands are not supported)"
        )));
    }
    let af = q.a.dequantize(ctx, sa.len() - 2)?;
    let bf = q.b.dequantize(ctx, sb.len() - 1)?;
    let yf = matmul(ctx, af, bf)?;
    q.finish(ctx, yf)
}

/// `a @ b` in float: a FullyConnected layer with weights `b^T` (and `b`'s quantization, its axis
/// moved) when `b` is a 2-D constant, else a MatMul.
pub fn matmul(
    ctx: &mut NodeCtx<'_>,
    a: crate::ir::TensorId,
    b: crate::ir::TensorId,
) -> Result<crate::ir::TensorId, ConvertError> {
    let sb = ctx.shape(b);
    if let (Some(bw), [k, n]) = (ctx.const_f32(b), sb.as_slice()) {
        let (k, n) = (*k, *n);
        let data: Vec<f32> = (0..n * k).map(|i| bw[(i % k) * n + i / k]).collect();
        let quant = ctx.graph().tensor(b).quant.clone().map(|q| Quant {
            axis: if q.scales.len() == 1 {
                0
            } else {
                1 - q.axis.min(1)
            },
            ..q
        });
        let w = ctx.add_constant("weights", vec![n, k], ConstData::F32(data));
        ctx.imp.graph.tensor_mut(w).quant = quant;
        let act = Activation::None;
        return ctx.emit_tmp("fully_connected", Op::FullyConnected { act }, vec![a, w]);
    }
    ctx.emit_tmp("matmul", Op::MatMul, vec![a, b])
}
