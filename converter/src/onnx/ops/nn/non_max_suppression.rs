//! ONNX `NonMaxSuppression` (opsets 10, 11) to the blob's [`OpKind::NonMaxSuppression`], carried as
//! it is ([`Op::Core`]). `max_output_boxes_per_class` (default 0: nothing selected),
//! `iou_threshold` (default 0) and `score_threshold` (default: none) must be constants. The count
//! depends on the data: the output is `[N, 3]` for the `--max-count` `N` of its output
//! ([`NodeCtx::max_count`]), -1 past the count.

use ember_core::schema::nn::non_max_suppression::NmsParams;
use ember_core::OpKind;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `NonMaxSuppression`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let boxes = ctx.input(0, "boxes")?;
    let scores = ctx.input(1, "scores")?;
    let max_per_class = match ctx.opt_input(2)? {
        Some(t) => match ctx.const_ints(t, "input max_output_boxes_per_class")?.as_slice() {
            [] => 0,
            [n] => u32::try_from((*n).max(0)).unwrap_or(u32::MAX),
            other => {
                return Err(ctx.err(format!(
                    "input max_output_boxes_per_class must hold one value, it holds {}",
                    other.len()
                )))
            }
        },
        None => 0,
    };
    let iou_threshold = match ctx.opt_input(3)? {
        Some(t) => ctx.const_scalar(t, "input iou_threshold")?,
        None => 0.0,
    };
    let score_threshold = match ctx.opt_input(4)? {
        Some(t) => ctx.const_scalar(t, "input score_threshold")?,
        None => f32::NEG_INFINITY,
    };
    let center_point_box = match ctx.attr_int("center_point_box")?.unwrap_or(0) {
        0 => false,
        1 => true,
        v => return Err(ctx.err(format!("attribute center_point_box={v} must be 0 or 1"))),
    };
    let params = NmsParams {
        center_point_box,
        max_per_class,
        iou_threshold,
        score_threshold,
        max: ctx.max_count()?,
    };
    ctx.emit(Op::Core(OpKind::NonMaxSuppression(params)), vec![boxes, scores])?;
    Ok(())
}
