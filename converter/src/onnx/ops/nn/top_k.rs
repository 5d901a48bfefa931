//! ONNX `TopK` (versions 1, 10, 11) to the blob's [`OpKind::TopK`], one node per output the model uses
//! (values, indices), carried as they are ([`Op::Core`]). `k` is the attribute before opset 10, a
//! constant input from it; `axis` defaults to -1; `largest` (default 1) and `sorted` (default 1)
//! come with opset 11. Ember always sorts, which `sorted=0` allows (its order is unspecified).

use ember_core::schema::nn::top_k::{TopKOutput, TopKParams};
use ember_core::OpKind;

use crate::ir::shape::resolve_axis;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `TopK`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let k = if ctx.opset < 10 {
        ctx.attr_int("k")?
            .ok_or_else(|| ctx.err("attribute k is missing"))?
    } else {
        let k_input = ctx.input(1, "K")?;
        match ctx.const_ints(k_input, "input K")?.as_slice() {
            [k] => *k,
            other => return Err(ctx.err(format!("input K must hold one value, it holds {}", other.len()))),
        }
    };
    let rank = ctx.shape(x).len();
    let axis = ctx.attr_int("axis")?.unwrap_or(-1);
    let axis = resolve_axis(axis, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    let flag = |ctx: &NodeCtx<'_>, name: &str| -> Result<bool, ConvertError> {
        match ctx.attr_int(name)?.unwrap_or(1) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ctx.err(format!("attribute {name}={v} must be 0 or 1"))),
        }
    };
    let largest = flag(ctx, "largest")?;
    let _sorted = flag(ctx, "sorted")?;
    let len = ctx.shape(x)[axis];
    let k = u32::try_from(k)
        .ok()
        .filter(|&k| k as usize <= len)
        .ok_or_else(|| ctx.err(format!("K={k} is not in 0..={len}, the length of axis {axis}")))?;
    let axis = u8::try_from(axis).map_err(|_| ctx.err(format!("axis {axis} is too large")))?;
    for (at, output) in [(0, TopKOutput::Values), (1, TopKOutput::Indices)] {
        if ctx.used_output(at).is_some() {
            let params = TopKParams { axis, k, largest, output };
            ctx.emit_output(at, Op::Core(OpKind::TopK(params)), vec![x])?;
        }
    }
    Ok(())
}
