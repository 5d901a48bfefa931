//! ONNX `InstanceNormalization` and `GroupNormalization`: `X [N, C, D1, ...]`, constant `scale` and
//! `B` (`bias`), `epsilon` (default 1e-5). Each group of `C / G` channels of each sample is normalized
//! over its channels and spatial dims, then scaled and shifted per channel; InstanceNormalization is
//! the case `G = C`. Imported as a Reshape (an alias) to `[N, G, C / G * D1 * ...]`, a LayerNorm over
//! the last axis with a scale of ones, a Reshape back, and a per-channel Mul and Add with the
//! constants. GroupNormalization is imported from opset 21, whose `scale` and `bias` are `[C]` (opset
//! 18's, one per group, is deprecated by ONNX); `stash_type` must be 1 (FLOAT, the default).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use crate::ir::shape::numel;
use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `InstanceNormalization` or `GroupNormalization`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let group_norm = ctx.node.op_type == "GroupNormalization";
    let x = ctx.input(0, "input")?;
    let xs = ctx.shape(x);
    let min_rank = if group_norm { 2 } else { 3 };
    if xs.len() < min_rank {
        return Err(ctx.err(format!(
            "input has shape {xs:?}; {} needs [N, C, D1, ...] (rank >= {min_rank})",
            ctx.node.op_type
        )));
    }
    let c = xs[1];
    let groups = if group_norm {
        let g = ctx.attr_int("num_groups")?.ok_or_else(|| ctx.err("attribute num_groups is required"))?;
        match usize::try_from(g) {
            Ok(g) if g > 0 && c.is_multiple_of(g) => g,
            _ => {
                return Err(ctx.err(format!(
                    "attribute num_groups={g} must divide the {c} channels"
                )))
            }
        }
    } else {
        c
    };
    if let Some(stash) = ctx.attr_int("stash_type")?.filter(|&t| t != 1) {
        return Err(ctx.err(format!(
            "attribute stash_type={stash} is not supported; Ember computes the statistics in FLOAT \
             (stash_type=1)"
        )));
    }
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
    let group = numel(&xs[2..]).map_err(|e| ctx.err(e))? * (c / groups);
    let flat = ctx.emit_tmp(
        "flatten",
        Op::Reshape {
            shape: vec![xs[0], groups, group],
        },
        vec![x],
    )?;
    let ones = ctx.add_constant("ones", vec![group], ConstData::F32(vec![1.0; group]));
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
