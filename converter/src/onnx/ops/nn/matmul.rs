//! ONNX `MatMul` (numpy semantics). Rank-1 operands are promoted to matrices with free Reshapes and
//! the promoted dims removed from the result. A constant 2-D (or 1-D) `B` becomes a FullyConnected
//! layer with weights `B^T`; anything else is a batched MatMul.

use ember_core::ops::math::activation::Activation;

use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `MatMul`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let a = ctx.input(0, "A")?;
    let b = ctx.input(1, "B")?;
    let (sa, sb) = (ctx.shape(a), ctx.shape(b));
    if sa.is_empty() || sb.is_empty() {
        return Err(ctx.err(format!("operands {sa:?} and {sb:?} must have rank >= 1")));
    }
    let k = sa[sa.len() - 1];
    let kb = if sb.len() == 1 {
        sb[0]
    } else {
        sb[sb.len() - 2]
    };
    if k != kb {
        return Err(ctx.err(format!("A {sa:?} and B {sb:?} have different inner dims")));
    }
    // The final shape: numpy's, with promoted dims dropped.
    let mut out: Vec<usize> = Vec::new();
    if let Some(bw) = ctx.const_f32(b).filter(|_| sb.len() <= 2) {
        let n = if sb.len() == 1 { 1 } else { sb[1] };
        let data: Vec<f32> = (0..n * k).map(|i| bw[(i % k) * n + i / k]).collect();
        let w = ctx.add_constant("weights", vec![n, k], ConstData::F32(data));
        let act = Activation::None;
        let y = ctx.emit_tmp("fully_connected", Op::FullyConnected { act }, vec![a, w])?;
        out.extend(&sa[..sa.len() - 1]);
        if sb.len() == 2 {
            out.push(n);
        }
        return finish_reshaped(ctx, y, out);
    }
    let a2 = if sa.len() == 1 {
        ctx.emit_tmp("promote_a", Op::Reshape { shape: vec![1, k] }, vec![a])?
    } else {
        a
    };
    let b2 = if sb.len() == 1 {
        ctx.emit_tmp("promote_b", Op::Reshape { shape: vec![k, 1] }, vec![b])?
    } else {
        b
    };
    let y = ctx.emit_tmp("matmul", Op::MatMul, vec![a2, b2])?;
    let ys = ctx.shape(y);
    out.extend(&ys[..ys.len() - 2]);
    if sa.len() > 1 {
        out.push(ys[ys.len() - 2]);
    }
    if sb.len() > 1 {
        out.push(ys[ys.len() - 1]);
    }
    finish_reshaped(ctx, y, out)
}

fn finish_reshaped(
    ctx: &mut NodeCtx<'_>,
    y: crate::ir::TensorId,
    shape: Vec<usize>,
) -> Result<(), ConvertError> {
    let y = if ctx.shape(y) == shape {
        y
    } else {
        ctx.emit_tmp("reshape", Op::Reshape { shape }, vec![y])?
    };
    ctx.finish(y)
}
