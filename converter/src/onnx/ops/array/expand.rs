//! ONNX `Expand` (to a constant shape, numpy broadcasting both ways) and `Tile` (constant repeats):
//! both are broadcast copies. Tile puts a size-1 axis in front of every tiled axis, broadcasts it to
//! the repeat count, and reshapes back; when that needs a rank above 6, it tiles one axis at a time.

use ember_core::ops::MAX_RANK;

use crate::ir::shape::broadcast;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Expand`.
pub fn import_expand(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let s = ctx.input(1, "shape")?;
    let target = ctx.const_sizes(s, "input shape")?;
    let dims = ctx.shape(x);
    let shape = broadcast(&dims, &target).map_err(|e| ctx.err(e))?;
    let op = if shape == dims {
        Op::Reshape { shape }
    } else {
        Op::Broadcast { shape }
    };
    ctx.emit(op, vec![x])?;
    Ok(())
}

/// Imports `Tile`.
pub fn import_tile(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let r = ctx.input(1, "repeats")?;
    let repeats = ctx.const_sizes(r, "input repeats")?;
    let dims = ctx.shape(x);
    if repeats.len() != dims.len() {
        return Err(ctx.err(format!(
            "repeats {repeats:?} must have one value per axis of {dims:?}"
        )));
    }
    let out = dims
        .iter()
        .zip(&repeats)
        .map(|(d, r)| d.checked_mul(*r))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| ctx.err(format!("tiling {dims:?} by {repeats:?} overflows")))?;
    let tiled: Vec<usize> = (0..dims.len()).filter(|&a| repeats[a] != 1).collect();
    if tiled.is_empty() {
        ctx.emit(Op::Reshape { shape: out }, vec![x])?;
        return Ok(());
    }
    let spread_rank = dims.len() + tiled.iter().filter(|&&a| dims[a] != 1).count();
    if spread_rank <= MAX_RANK {
        // [d] -> [1, d] -> [r, d] on tiled axes of size > 1; [1] -> [r] on tiled axes of size 1.
        let (mut spread, mut wide) = (Vec::new(), Vec::new());
        for (&d, &r) in dims.iter().zip(&repeats) {
            if r != 1 && d != 1 {
                spread.push(1);
                wide.push(r);
            }
            spread.push(d);
            wide.push(if d == 1 { r } else { d });
        }
        let a = ctx.emit_tmp("spread", Op::Reshape { shape: spread }, vec![x])?;
        let b = ctx.emit_tmp("tiled", Op::Broadcast { shape: wide }, vec![a])?;
        ctx.emit(Op::Reshape { shape: out }, vec![b])?;
        return Ok(());
    }
    // Too many axes for one broadcast: one axis at a time, as [outer, 1, d, inner] -> [outer, r, d, inner].
    let (mut cur, mut cur_dims) = (x, dims);
    for (k, &a) in tiled.iter().enumerate() {
        let outer: usize = cur_dims[..a].iter().product();
        let inner: usize = cur_dims[a + 1..].iter().product();
        let d = cur_dims[a];
        let spread = vec![outer, 1, d, inner];
        let wide = vec![outer, repeats[a], d, inner];
        cur_dims[a] = out[a];
        let s = ctx.emit_tmp(
            &format!("spread{a}"),
            Op::Reshape { shape: spread },
            vec![cur],
        )?;
        let b = ctx.emit_tmp(&format!("tiled{a}"), Op::Broadcast { shape: wide }, vec![s])?;
        let shape = cur_dims.clone();
        cur = if k + 1 == tiled.len() {
            ctx.emit(Op::Reshape { shape }, vec![b])?
        } else {
            ctx.emit_tmp(&format!("step{a}"), Op::Reshape { shape }, vec![b])?
        };
    }
    Ok(())
}
