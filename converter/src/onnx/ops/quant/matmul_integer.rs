//! ONNX `MatMulInteger`: `Y = (A - a_zero_point) @ (B - b_zero_point)` in int32, of int8 or uint8
//! operands, with per-tensor zero points (and, for a constant 2-D `B`, per-column ones).
//!
//! Lowered exactly in float32 like `ConvInteger` (see [`super::conv_integer`]): the operands minus
//! their zero points as FLOAT, a float MatMul (a FullyConnected layer for a constant `B`), and a Cast to
//! INT32. Exact while every partial sum stays below 2^24 in magnitude; the converter checks
//! `K * 255 * max|B - b_zero_point|` (`K * 255 * 255` for a `B` computed at run time) against that
//! bound and rejects the node beyond it (`K` up to 258 always passes).

use crate::ir::ConstData;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::conv_integer::{centered, centered_weights, finish_int32, integer_operands, EXACT_F32};

/// Imports `MatMulInteger`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let [(a, a_zp), (b, b_zp)] = integer_operands(ctx, ["A", "B"])?;
    let (sa, sb) = (ctx.shape(a), ctx.shape(b));
    if sa.len() < 2 || sb.len() < 2 || sa[sa.len() - 1] != sb[sb.len() - 2] {
        return Err(ctx.err(format!(
            "A {sa:?} and B {sb:?} must have rank >= 2 and matching inner dims (rank-1 operands \
             are not supported)"
        )));
    }
    let k = sa[sa.len() - 1] as f64;
    let af = centered(ctx, a, a_zp, "A")?;
    let (bf, bmax) = if ctx.graph().is_const(b) {
        let (v, max) = centered_weights(ctx, b, b_zp, sb.len() - 1)?;
        let id = ctx.add_constant("B_centered", sb.clone(), ConstData::F32(v));
        (id, max)
    } else {
        (centered(ctx, b, b_zp, "B")?, 255.0)
    };
    if k * 255.0 * bmax >= EXACT_F32 {
        return Err(ctx.err(format!(
            "inner dimension {k} with values up to {bmax} may sum past 2^24, where Ember's float32 \
             lowering of MatMulInteger is no longer exact; such a product is not supported"
        )));
    }
    let yf = super::qlinear_matmul::matmul(ctx, af, bf)?;
    finish_int32(ctx, yf)
}
