//! ONNX `LpNormalization`: `y = x / ||x||_p` along `axis` (default -1), `p` 1 or 2 (default 2).
//! Decomposed into the norm, a [`Op::Reduce`] (`L1`: `sum |x|`, `L2`: `sqrt(sum x^2)`) with the axis
//! kept, and a broadcast [`BinaryOp::Div`]: the same sums onnxruntime computes, in float32, so the
//! results agree to rounding. A zero vector stays zero, as in onnxruntime (its kernel skips the
//! division where the norm is 0; `0 / 0` would give NaN): a [`Op::Compare`] and a [`Op::Where`] on
//! the norm, a tensor of `numel / dims[axis]` elements, replace a zero norm by 1 first. FLOAT only,
//! as the reductions are.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::compare::CompareOp;
use ember_core::ops::nn::reduce::ReduceOp;

use crate::ir::shape::resolve_axis;
use crate::ir::{ConstData, Op};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `LpNormalization`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let rank = ctx.shape(x).len();
    let axis = ctx.attr_int("axis")?.unwrap_or(-1);
    let axis = resolve_axis(axis, rank).map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    let op = match ctx.attr_int("p")?.unwrap_or(2) {
        1 => ReduceOp::L1,
        2 => ReduceOp::L2,
        p => {
            return Err(ctx.err(format!(
                "attribute p={p} is not supported; ONNX defines 1 and 2"
            )))
        }
    };
    let reduce = Op::Reduce {
        op,
        axes: vec![axis],
        keepdims: true,
    };
    let norm = ctx.emit_tmp("norm", reduce, vec![x])?;
    let zero = ctx.add_constant("zero", vec![], ConstData::F32(vec![0.0]));
    let one = ctx.add_constant("one", vec![], ConstData::F32(vec![1.0]));
    let is_zero = ctx.emit_tmp(
        "norm_is_zero",
        Op::Compare(CompareOp::Equal),
        vec![norm, zero],
    )?;
    let divisor = ctx.emit_tmp("divisor", Op::Where, vec![is_zero, one, norm])?;
    let div = Op::Binary {
        op: BinaryOp::Div,
        act: Activation::None,
    };
    ctx.emit(div, vec![x, divisor])?;
    Ok(())
}
