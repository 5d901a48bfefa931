//! ONNX `Gemm`: `Y = alpha * A' * B' + beta * C`, with `A'`/`B'` optionally transposed.
//!
//! A constant `B` becomes a FullyConnected layer with weights `[N, K]` (transposed here if needed and
//! scaled by `alpha`); a constant `C` of shape `[N]`, `[1, N]` or one element becomes its bias (scaled
//! by `beta`). Any other `C` is added with a broadcasting Add. A non-constant `B` gives a MatMul
//! (and a Mul by `alpha` when it is not 1).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use crate::ir::{ConstData, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Gemm`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let a = ctx.input(0, "A")?;
    let b = ctx.input(1, "B")?;
    let c = ctx.opt_input(2)?;
    let alpha = ctx.attr_float("alpha")?.unwrap_or(1.0);
    let beta = ctx.attr_float("beta")?.unwrap_or(1.0);
    let trans_a = ctx.attr_int("transA")?.unwrap_or(0) != 0;
    let trans_b = ctx.attr_int("transB")?.unwrap_or(0) != 0;
    let (sa, sb) = (ctx.shape(a), ctx.shape(b));
    if sa.len() != 2 || sb.len() != 2 {
        return Err(ctx.err(format!("A {sa:?} and B {sb:?} must both be 2-D")));
    }
    let (m, ka) = if trans_a {
        (sa[1], sa[0])
    } else {
        (sa[0], sa[1])
    };
    let (kb, n) = if trans_b {
        (sb[1], sb[0])
    } else {
        (sb[0], sb[1])
    };
    if ka != kb {
        return Err(ctx.err(format!(
            "A {sa:?} (transA={}) and B {sb:?} (transB={}) have different inner dims",
            u8::from(trans_a),
            u8::from(trans_b)
        )));
    }
    let a = if trans_a {
        ctx.emit_tmp("transpose_a", Op::Transpose { perm: vec![1, 0] }, vec![a])?
    } else {
        a
    };
    let c = c.filter(|_| beta != 0.0);
    let mut bias: Option<TensorId> = None;
    let mut y = if let Some(bw) = ctx.const_f32(b) {
        let w = if trans_b && alpha == 1.0 {
            b
        } else {
            let data: Vec<f32> = (0..n * ka)
                .map(|i| {
                    let (o, k) = (i / ka, i % ka);
                    alpha
                        * if trans_b {
                            bw[o * ka + k]
                        } else {
                            bw[k * n + o]
                        }
                })
                .collect();
            ctx.add_constant("weights", vec![n, ka], ConstData::F32(data))
        };
        bias = c.and_then(|c| bias_of(ctx, c, n, beta));
        let mut inputs = vec![a, w];
        inputs.extend(bias);
        let act = Activation::None;
        ctx.emit_tmp("fully_connected", Op::FullyConnected { act }, inputs)?
    } else {
        let b = if trans_b {
            ctx.emit_tmp("transpose_b", Op::Transpose { perm: vec![1, 0] }, vec![b])?
        } else {
            b
        };
        let mut y = ctx.emit_tmp("matmul", Op::MatMul, vec![a, b])?;
        if alpha != 1.0 {
            let s = ctx.add_constant("alpha", vec![1], ConstData::F32(vec![alpha]));
            y = ctx.emit_tmp("alpha", binary(BinaryOp::Mul), vec![y, s])?;
        }
        y
    };
    if let (Some(c), None) = (c, bias) {
        let c = if beta == 1.0 {
            c
        } else if let Some(cd) = ctx.const_f32(c) {
            let data = cd.iter().map(|v| v * beta).collect();
            let shape = ctx.shape(c);
            ctx.add_constant("c", shape, ConstData::F32(data))
        } else {
            let s = ctx.add_constant("beta", vec![1], ConstData::F32(vec![beta]));
            ctx.emit_tmp("beta", binary(BinaryOp::Mul), vec![c, s])?
        };
        y = ctx.emit_tmp("add_c", binary(BinaryOp::Add), vec![y, c])?;
        if ctx.shape(y) != [m, n] {
            return Err(ctx.err(format!(
                "C {:?} does not broadcast to the result [{m}, {n}]",
                ctx.shape(c)
            )));
        }
    }
    ctx.finish(y)
}

fn binary(op: BinaryOp) -> Op {
    Op::Binary {
        op,
        act: Activation::None,
    }
}

/// A bias `[n]` made from a constant `C` of shape `[n]`, `[1, n]` or one element, scaled by `beta`.
fn bias_of(ctx: &mut NodeCtx<'_>, c: TensorId, n: usize, beta: f32) -> Option<TensorId> {
    let shape = ctx.shape(c);
    let data = ctx.const_f32(c)?;
    let fits = shape == [n] || shape == [1, n];
    if fits && beta == 1.0 && shape.len() == 1 {
        return Some(c);
    }
    let values: Vec<f32> = match data {
        [v] => vec![v * beta; n],
        _ if fits => data.iter().map(|v| v * beta).collect(),
        _ => return None,
    };
    Some(ctx.add_constant("bias", vec![n], ConstData::F32(values)))
}
