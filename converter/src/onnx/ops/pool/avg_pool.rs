//! ONNX `AveragePool` (1-D or 2-D) to [`Op::AvgPool`], with `count_include_pad` and `ceil_mode`;
//! with `dilations`, as [`dilated`](super::dilated).
//!
//! `ceil_mode=1` becomes extra end padding ([`window_of`]), which the divisor must not count: onnxruntime
//! divides a clipped last window by its cells inside the input (`count_include_pad=0`) or inside the
//! input and its explicit pads (`count_include_pad=1`). The first is Ember's average without
//! `count_include_pad`; the second is that same average over the input padded with zeros by its
//! explicit pads first (a Pad), so that those pads count as cells and the extra ones do not.

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::pool::{dilated, emit_pool, window_of};
use crate::ConvertError;

/// Imports `AveragePool`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "X")?;
    let include = ctx.attr_int("count_include_pad")?.unwrap_or(0) != 0;
    let w = window_of(ctx, &ctx.shape(x), include)?;
    if w.dilations != [1, 1] {
        return dilated::emit(ctx, x, &w, dilated::Reduce::Mean);
    }
    if !include || w.ceil_extra == [0, 0] {
        return emit_pool(ctx, Op::AvgPool(w.pool), x, None);
    }
    let explicit = w.explicit_pads();
    let mut p = w.pool;
    p.count_include_pad = false;
    p.pads = [0, 0, w.ceil_extra[0], w.ceil_extra[1]];
    let pre_pad = (explicit != [0; 4]).then_some(explicit);
    emit_pool(ctx, Op::AvgPool(p), x, pre_pad)
}
