//! ONNX `DepthToSpace` (modes DCR and CRD) and `SpaceToDepth` on NCHW tensors: each is a Reshape to
//! rank 6, a Transpose, and a Reshape back, so no kernel of its own.

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

fn block_and_dims(ctx: &NodeCtx<'_>) -> Result<(usize, [usize; 4]), ConvertError> {
    let x = ctx.input(0, "input")?;
    let dims = ctx.shape(x);
    let [n, c, h, w] = dims[..] else {
        return Err(ctx.err(format!("input {dims:?} must have rank 4 (NCHW)")));
    };
    let b = ctx
        .attr_int("blocksize")?
        .ok_or_else(|| ctx.err("attribute blocksize is required"))?;
    let b = usize::try_from(b)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| ctx.err(format!("attribute blocksize={b} must be at least 1")))?;
    Ok((b, [n, c, h, w]))
}

fn lower(
    ctx: &mut NodeCtx<'_>,
    split: Vec<usize>,
    perm: Vec<usize>,
    out: Vec<usize>,
) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let a = ctx.emit_tmp("blocks", Op::Reshape { shape: split }, vec![x])?;
    let t = ctx.emit_tmp("moved", Op::Transpose { perm }, vec![a])?;
    ctx.emit(Op::Reshape { shape: out }, vec![t])?;
    Ok(())
}

/// Imports `DepthToSpace`.
pub fn import_depth_to_space(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let (b, [n, c, h, w]) = block_and_dims(ctx)?;
    let bb = b
        .checked_mul(b)
        .ok_or_else(|| ctx.err(format!("blocksize {b} is too large")))?;
    if !c.is_multiple_of(bb) {
        return Err(ctx.err(format!(
            "channels {c} are not a multiple of blocksize^2 = {bb}"
        )));
    }
    let cb = c / bb;
    let mode = ctx.attr_string("mode")?.unwrap_or_else(|| "DCR".into());
    let (split, perm) = match mode.as_str() {
        "DCR" => (vec![n, b, b, cb, h, w], vec![0, 3, 4, 1, 5, 2]),
        "CRD" => (vec![n, cb, b, b, h, w], vec![0, 1, 4, 2, 5, 3]),
        other => {
            return Err(ctx.err(format!(
                "attribute mode={other} is not supported (DCR or CRD)"
            )))
        }
    };
    let grow = |d: usize| {
        d.checked_mul(b)
            .ok_or_else(|| ctx.err("the output size overflows"))
    };
    let out = vec![n, cb, grow(h)?, grow(w)?];
    lower(ctx, split, perm, out)
}

/// Imports `SpaceToDepth`.
pub fn import_space_to_depth(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let (b, [n, c, h, w]) = block_and_dims(ctx)?;
    if !h.is_multiple_of(b) || !w.is_multiple_of(b) {
        return Err(ctx.err(format!(
            "height {h} and width {w} must be multiples of blocksize {b}"
        )));
    }
    let depth = b
        .checked_mul(b)
        .and_then(|bb| c.checked_mul(bb))
        .ok_or_else(|| ctx.err("the output depth overflows"))?;
    let split = vec![n, c, h / b, b, w / b, b];
    lower(
        ctx,
        split,
        vec![0, 3, 5, 1, 2, 4],
        vec![n, depth, h / b, w / b],
    )
}
