//! ONNX `OneHot`: `indices` (any numeric type), a constant `depth` (one value; a float one is
//! truncated) and `values` `[off, on]` (the output's dtype) give `y` of `indices`' dims with `depth`
//! inserted at `axis` (default -1, counted in the output's rank), `on` where the class is the index
//! and `off` elsewhere. Indices outside `[-depth, depth)` give rows of `off`; from opset 11 a negative
//! index counts from the end (`-1` is class `depth - 1`), before opset 11 it is out of range.
//!
//! Decomposed into existing kinds: float and narrower integer indices are cast to INT64 (a float
//! truncates toward zero, as ONNX states), negative ones wrapped by a [`Op::Where`] on the indices'
//! own size, then reshaped with a 1 at `axis` and compared ([`Op::Compare`] Equal) against a constant
//! `[depth, 1, ...]` of the classes `0..depth`; that mask selects ([`Op::Where`]) between `values[1]`
//! and `values[0]` (two one-element [`Op::Slice`]s of `values`, folded when it is a constant).
//! UINT64 indices are compared as they are (none is negative).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::compare::CompareOp;

use crate::ir::op::Slice;
use crate::ir::shape::{numel, resolve_axis};
use crate::ir::{ConstData, DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `OneHot`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let indices = ctx.input(0, "indices")?;
    let depth = read_depth(ctx, ctx.input(1, "depth")?)?;
    let values = ctx.input(2, "values")?;
    let is = ctx.shape(indices);
    let axis = ctx.attr_int("axis")?.unwrap_or(-1);
    let axis = resolve_axis(axis, is.len() + 1)
        .map_err(|e| ctx.err(format!("attribute axis: {e} (the output's rank)")))?;

    let index_type = ctx.graph().tensor(indices).dtype;
    let compared = match index_type {
        DType::Bool => {
            return Err(ctx.err("indices are bool; OneHot takes numeric indices"));
        }
        DType::I64 | DType::U64 => indices,
        _ => ctx.emit_tmp("as_int64", Op::Cast { to: DType::I64 }, vec![indices])?,
    };
    let compare_type = if index_type == DType::U64 {
        DType::U64
    } else {
        DType::I64
    };
    let scalar = |ctx: &mut NodeCtx<'_>, name: &str, v: i64| {
        let name = format!("{}.{name}", ctx.name);
        ctx.imp
            .graph
            .add_constant_of(&name, vec![], ConstData::I64(vec![v]), compare_type)
    };
    let depth_i64 = i64::try_from(depth).map_err(|_| ctx.err("depth is too large"))?;
    let compared = if ctx.opset >= 11 && compare_type == DType::I64 {
        // index < 0 ? index + depth : index
        let zero = scalar(ctx, "zero", 0);
        let shift = scalar(ctx, "depth", depth_i64);
        let negative = ctx.emit_tmp(
            "negative",
            Op::Compare(CompareOp::Less),
            vec![compared, zero],
        )?;
        let add = Op::Binary {
            op: BinaryOp::Add,
            act: Activation::None,
        };
        let shifted = ctx.emit_tmp("from_end", add, vec![compared, shift])?;
        ctx.emit_tmp("wrapped", Op::Where, vec![negative, shifted, compared])?
    } else {
        compared
    };
    let mut column = is.clone();
    column.insert(axis, 1);
    let column = ctx.emit_tmp("column", Op::Reshape { shape: column }, vec![compared])?;
    let mut class_shape = vec![depth];
    class_shape.resize(is.len() + 1 - axis, 1);
    let classes = ctx.imp.graph.add_constant_of(
        &format!("{}.classes", ctx.name),
        class_shape,
        ConstData::I64((0..depth_i64).collect()),
        compare_type,
    );
    let hot = ctx.emit_tmp("hot", Op::Compare(CompareOp::Equal), vec![column, classes])?;
    let (off, on) = off_on(ctx, values)?;
    ctx.emit(Op::Where, vec![hot, on, off])?;
    Ok(())
}

/// The one value of the constant `depth`, at least 1 (a float one truncated toward zero).
fn read_depth(ctx: &NodeCtx<'_>, depth: TensorId) -> Result<usize, ConvertError> {
    let t = ctx.graph().tensor(depth);
    let value = match &t.data {
        Some(ConstData::F32(v)) if v.len() == 1 => f64::from(v[0]).trunc(),
        Some(ConstData::I64(v)) if v.len() == 1 => v[0] as f64,
        Some(d) => {
            return Err(ctx.err(format!(
                "depth (\"{}\") must hold one value, it holds {}",
                t.name,
                d.len()
            )))
        }
        None => {
            return Err(ctx.err(format!(
                "depth (\"{}\") must be a constant (an initializer or a Constant node); it sets \
                 the output's shape, which Ember resolves at conversion time",
                t.name
            )))
        }
    };
    // The range check makes the conversion exact.
    if (1.0..=f64::from(u32::MAX)).contains(&value) {
        Ok(value as usize)
    } else {
        Err(ctx.err(format!(
            "depth (\"{}\") is {value}; it must be at least 1 (and at most {})",
            t.name,
            u32::MAX
        )))
    }
}

/// `values[0]` and `values[1]` (off and on) as one-element tensors, which broadcast against the
/// mask.
fn off_on(ctx: &mut NodeCtx<'_>, values: TensorId) -> Result<(TensorId, TensorId), ConvertError> {
    let vs = ctx.shape(values);
    if numel(&vs).map_err(|e| ctx.err(e))? != 2 || vs.len() != 1 {
        return Err(ctx.err(format!(
            "values has shape {vs:?}; it must be [2] (off value, on value)"
        )));
    }
    let mut pick = |name: &str, start: usize| {
        let slice = Slice {
            start: vec![start],
            step: vec![1],
            size: vec![1],
        };
        ctx.emit_tmp(name, Op::Slice(slice), vec![values])
    };
    Ok((pick("off", 0)?, pick("on", 1)?))
}
