//! ONNX `LayerNormalization` (opset 17) to the blob's [`OpKind::LayerNorm`], carried as it is
//! ([`Op::Core`]: its shape inference and checks are the runtime's, `core/src/ops/nn/layer_norm.rs`): `axis` (default -1), `epsilon` (default
//! 1e-5), `Scale` and optional `B` broadcastable to `X.shape[axis..]`. Constant scale and bias are
//! expanded to that shape at conversion time; computed ones must have it already. `stash_type` must be
//! 1 (FLOAT, the default): Ember computes the statistics in f32.
//!
//! The optional outputs `Mean` and `InvStdDev` (shape `X.shape[..axis]` followed by 1s) are computed,
//! when the model reads them, by the spec's own decomposition:
//! `Mean = ReduceMean(X)`, `InvStdDev = 1 / sqrt(ReduceMean((X - Mean)^2) + epsilon)`, both reduced
//! over the axes from `axis` on with the dims kept. `Y` stays one fused LayerNorm.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::reduce::ReduceOp;

use ember_core::ops::nn::layer_norm::LayerNormParams;
use ember_core::OpKind;

use crate::ir::shape::{broadcasts_to, resolve_axis};
use crate::ir::{ConstData, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `LayerNormalization`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let scale = ctx.input(1, "Scale")?;
    let bias = ctx.opt_input(2)?;
    let xs = ctx.shape(x);
    let (axis, epsilon) = attributes(ctx, xs.len())?;
    let inner = xs[axis..].to_vec();
    let mut inputs = vec![x, expand_to(ctx, scale, &inner, "scale")?];
    if let Some(b) = bias {
        inputs.push(expand_to(ctx, b, &inner, "bias")?);
    }
    let op = layer_norm(axis, epsilon).map_err(|e| ctx.err(e))?;
    ctx.emit(op, inputs)?;
    let wants = |i: usize| ctx.node.output.get(i).is_some_and(|n| !n.is_empty());
    let (want_mean, want_inv_std_dev) = (wants(1), wants(2));
    if !want_mean && !want_inv_std_dev {
        return Ok(());
    }
    let mean_op = Op::Reduce {
        op: ReduceOp::Mean,
        axes: (axis..xs.len()).collect(),
        keepdims: true,
    };
    let binary = |op| Op::Binary {
        op,
        act: Activation::None,
    };
    let mean = ctx.emit_tmp("mean", mean_op.clone(), vec![x])?;
    bind_extra_output(ctx, 1, mean)?;
    if !want_inv_std_dev {
        return Ok(());
    }
    let centered = ctx.emit_tmp("centered", binary(BinaryOp::Sub), vec![x, mean])?;
    let squared = ctx.emit_tmp("squared", binary(BinaryOp::Mul), vec![centered, centered])?;
    let var = ctx.emit_tmp("var", mean_op, vec![squared])?;
    let eps = ctx.add_constant("epsilon", vec![], ConstData::F32(vec![epsilon]));
    let var_eps = ctx.emit_tmp("var_eps", binary(BinaryOp::Add), vec![var, eps])?;
    let std_dev = ctx.emit_tmp("std_dev", Op::Unary(UnaryOp::Sqrt), vec![var_eps])?;
    let inv = ctx.emit_tmp("inv_std_dev", Op::Unary(UnaryOp::Reciprocal), vec![std_dev])?;
    bind_extra_output(ctx, 2, inv)
}

/// The attributes of LayerNormalization and RMSNormalization for an input of rank `rank`: `axis`
/// (default -1, resolved) and `epsilon` (default 1e-5); `stash_type` must be 1 (FLOAT, the default):
/// Ember computes the statistics in f32.
pub(crate) fn attributes(ctx: &mut NodeCtx<'_>, rank: usize) -> Result<(usize, f32), ConvertError> {
    let axis_attr = ctx.attr_int("axis")?.unwrap_or(-1);
    let axis =
        resolve_axis(axis_attr, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    let epsilon = ctx.attr_float("epsilon")?.unwrap_or(1e-5);
    if let Some(stash) = ctx.attr_int("stash_type")?.filter(|&t| t != 1) {
        return Err(ctx.err(format!(
            "attribute stash_type={stash} is not supported; Ember computes the statistics in FLOAT \
             (stash_type=1)"
        )));
    }
    Ok((axis, epsilon))
}

/// The layer normalization of the axes from `axis` on (also InstanceNormalization's, and the model
/// builder's `nn.LayerNorm`).
pub(crate) fn layer_norm(axis: usize, epsilon: f32) -> Result<Op, String> {
    let axis = u8::try_from(axis)
        .map_err(|_| format!("axis {axis} is above the largest Ember supports, {}", u8::MAX))?;
    Ok(Op::Core(OpKind::LayerNorm(LayerNormParams { axis, epsilon })))
}

/// Binds the node's output `i`, when the model names it, to `id` (renamed after it).
fn bind_extra_output(ctx: &mut NodeCtx<'_>, i: usize, id: TensorId) -> Result<(), ConvertError> {
    let Some(name) = ctx.node.output.get(i).filter(|n| !n.is_empty()).cloned() else {
        return Ok(());
    };
    if ctx.imp.values.contains_key(&name) {
        return Err(ctx.err(format!(
            "output \"{name}\" is already defined by an earlier node"
        )));
    }
    let g = &mut ctx.imp.graph;
    if !g.is_const(id) && !g.is_input(id) {
        g.rename(id, &name);
    }
    ctx.imp.values.insert(name, id);
    Ok(())
}

/// `t` broadcast (numpy rules, one way) to exactly `target`: itself if it has that shape, an expanded
/// copy if it is a constant, an error otherwise.
pub(crate) fn expand_to(
    ctx: &mut NodeCtx<'_>,
    t: TensorId,
    target: &[usize],
    what: &str,
) -> Result<TensorId, ConvertError> {
    let shape = ctx.shape(t);
    if shape == target {
        return Ok(t);
    }
    let fits = broadcasts_to(&shape, target);
    let Some(data) = ctx.const_f32(t).filter(|_| fits) else {
        return Err(ctx.err(format!(
            "{what} (\"{}\") has shape {shape:?}; it must be {target:?}, or a constant that \
             broadcasts to it",
            ctx.graph().tensor(t).name
        )));
    };
    let lead = target.len() - shape.len();
    let mut out = Vec::with_capacity(target.iter().product());
    let mut index = vec![0usize; target.len()];
    for _ in 0..target.iter().product::<usize>() {
        let src = shape.iter().enumerate().fold(0, |acc, (d, &s)| {
            acc * s + if s == 1 { 0 } else { index[lead + d] }
        });
        out.push(data[src]);
        for d in (0..target.len()).rev() {
            index[d] += 1;
            if index[d] < target[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(ctx.add_constant(what, target.to_vec(), ConstData::F32(out)))
}
