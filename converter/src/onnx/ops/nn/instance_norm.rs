//! ONNX `InstanceNormalization`: `X [N, C, D1, ...]`, constant `scale [C]` and `B [C]`, `epsilon`
//! (default 1e-5). Each `(n, c)` plane is normalized over its spatial dims, then scaled and shifted per
//! channel. Imported as a Reshape (an alias) to `[N, C, D1 * ...]`, a LayerNorm over the last
//! axis with a scale of ones, a Reshape back, and a per-channel Mul and Add with the constants.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use crate::ir::shape::numel;
use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `InstanceNormalization`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let xs = ctx.shape(x);
    if xs.len() < 3 {
        return Err(ctx.err(format!(
            "input has shape {xs:?}; InstanceNormalization needs [N, C, D1, ...] (rank >= 3)"
        )));
    }
    let c = xs[1];
    let mut params = Vec::new();
    for (i, what) in [(1, "scale"), (2, "B")] {
        let t = ctx.input(i, what)?;
        match ctx.const_f32(t) {
            Some(v) if v.len() == c && ctx.shape(t).len() == 1 => params.push(v.to_vec()),
            _ => {
                return Err(ctx.err(format!(
                    "{what} (\"{}\") must be a FLOAT constant of shape [{c}]",
                    ctx.graph().tensor(t).name
                )))
            }
        }
    }
    let epsilon = ctx.attr_float("epsilon")?.unwrap_or(1e-5);
    let spatial = numel(&xs[2..]).map_err(|e| ctx.err(e))?;
    let flat = ctx.emit_tmp(
        "flatten",
        Op::Reshape {
            shape: vec![xs[0], c, spatial],
        },
        vec![x],
    )?;
    let ones = ctx.add_constant("ones", vec![spatial], ConstData::F32(vec![1.0; spatial]));
    let layer_norm = super::layer_norm::layer_norm(2, epsilon).map_err(|e| ctx.err(e))?;
    let norm = ctx.emit_tmp("norm", layer_norm, vec![flat, ones])?;
    let back = ctx.emit_tmp("unflatten", Op::Reshape { shape: xs.clone() }, vec![norm])?;
    // Per-channel constants shaped [C, 1, ...] broadcast against [N, C, D1, ...].
    let mut channel_shape = vec![c];
    channel_shape.resize(xs.len() - 1, 1);
    let bias = params.pop().unwrap_or_default();
    let scale = params.pop().unwrap_or_default();
    let scale = ctx.add_constant("scale", channel_shape.clone(), ConstData::F32(scale));
    let bias = ctx.add_constant("bias", channel_shape, ConstData::F32(bias));
    let binary = |op| Op::Binary {
        op,
        act: Activation::None,
    };
    let scaled = ctx.emit_tmp("scale", binary(BinaryOp::Mul), vec![back, scale])?;
    ctx.emit(binary(BinaryOp::Add), vec![scaled, bias])?;
    Ok(())
}
