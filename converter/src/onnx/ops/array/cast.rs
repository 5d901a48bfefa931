//! ONNX `Cast` and `CastLike` (to the type of its second input). Casts of constants are evaluated at
//! conversion time (values held as f32 or i64): float to integer truncates toward zero, integers wrap
//! to the target width, anything to BOOL is `!= 0`. A cast of a runtime value to its own type is an
//! identity, any other a runtime [`Op::Cast`] (float16 and strings are not runtime types).

use crate::ir::{ConstData, DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::proto::data_type;
use crate::onnx::tensor::dtype_of;
use crate::ConvertError;

use super::shape::bind_constant_of;

/// Imports `Cast`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let to = ctx
        .attr_int("to")?
        .ok_or_else(|| ctx.err("attribute to is required"))?;
    let to = i32::try_from(to).map_err(|_| ctx.err(format!("attribute to={to} is not a type")))?;
    cast(ctx, x, to)
}

/// Imports `CastLike`.
pub fn import_like(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let target = ctx.input(1, "target_type")?;
    let to = crate::onnx::tensor::onnx_type(ctx.graph().tensor(target).dtype);
    cast(ctx, x, to)
}

/// `x` cast to ONNX data type `to`.
fn cast(ctx: &mut NodeCtx<'_>, x: TensorId, to: i32) -> Result<(), ConvertError> {
    let t = ctx.graph().tensor(x);
    let shape = t.shape.clone();
    let from = t.dtype;
    let Some(dtype) = dtype_of(to) else {
        return Err(ctx.err(format!(
            "a cast to {} ({to}) is not supported",
            data_type::name(to)
        )));
    };
    let Some(data) = t.data.clone() else {
        if dtype == from {
            ctx.emit(Op::Reshape { shape }, vec![x])?;
        } else {
            ctx.emit(Op::Cast { to: dtype }, vec![x])?;
        }
        return Ok(());
    };
    let int_bits = |d: DType| (d.size() * 8) as u32;
    let wrap = |v: i64| -> i64 {
        // Two's-complement wrap to the target width, as numpy's astype does.
        let bits = int_bits(dtype);
        if bits >= 64 {
            return v;
        }
        let unsigned = matches!(dtype, DType::U8 | DType::U16 | DType::U32);
        let m = v & ((1i64 << bits) - 1);
        if !unsigned && m >= 1i64 << (bits - 1) {
            m - (1i64 << bits)
        } else {
            m
        }
    };
    let cast = match dtype {
        DType::F32 | DType::F64 => ConstData::F32(match data {
            ConstData::F32(v) => v,
            ConstData::I64(v) => v.iter().map(|&i| i as f32).collect(),
        }),
        // Held in f32, rounded to float16's precision now (lowering then writes them exactly).
        DType::F16 => {
            let round = |x: f32| ember_core::half::f16::from_f32(x).to_f32();
            ConstData::F32(match data {
                ConstData::F32(v) => v.into_iter().map(round).collect(),
                ConstData::I64(v) => v.iter().map(|&i| round(i as f32)).collect(),
            })
        }
        DType::Bool => ConstData::I64(match data {
            ConstData::F32(v) => v.iter().map(|&f| i64::from(f != 0.0)).collect(),
            ConstData::I64(v) => v.iter().map(|&i| i64::from(i != 0)).collect(),
        }),
        _ => ConstData::I64(match data {
            // `as` truncates toward zero (and saturates), like numpy's astype for in-range values.
            ConstData::F32(v) => v.iter().map(|&f| wrap(f as i64)).collect(),
            ConstData::I64(v) => v.iter().map(|&i| wrap(i)).collect(),
        }),
    };
    bind_constant_of(ctx, shape, cast, dtype)
}
