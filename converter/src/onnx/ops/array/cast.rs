//! ONNX `Cast` and `CastLike` (to the type of its second input: FLOAT or, for an integer constant,
//! INT64). Casts of constants are evaluated at
//! conversion time between FLOAT/DOUBLE (held as f32) and INT64/INT32/INT8/UINT8/BOOL (held as i64):
//! float to integer truncates toward zero, anything to BOOL is `!= 0`. A cast of a FLOAT activation to
//! FLOAT is an identity; any other cast of a runtime value is unsupported (Ember computes in f32).

use crate::ir::{ConstData, DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::proto::data_type;
use crate::ConvertError;

use super::shape::bind_constant;

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
    let to = match ctx.graph().tensor(target).dtype {
        DType::F32 => data_type::FLOAT,
        DType::I64 => data_type::INT64,
    };
    cast(ctx, x, to)
}

/// `x` cast to ONNX data type `to`.
fn cast(ctx: &mut NodeCtx<'_>, x: TensorId, to: i32) -> Result<(), ConvertError> {
    let t = ctx.graph().tensor(x);
    let shape = t.shape.clone();
    let Some(data) = t.data.clone() else {
        if to == data_type::FLOAT {
            ctx.emit(Op::Reshape { shape }, vec![x])?;
            return Ok(());
        }
        return Err(ctx.err(format!(
            "a cast of the runtime value \"{}\" to {} is not supported; Ember computes in FLOAT \
             only (casts of constants are evaluated at conversion time)",
            t.name,
            data_type::name(to)
        )));
    };
    let cast = match (data, to) {
        (d, data_type::FLOAT | data_type::DOUBLE | data_type::FLOAT16) => ConstData::F32(match d {
            ConstData::F32(v) => v,
            ConstData::I64(v) => v.iter().map(|&i| i as f32).collect(),
        }),
        (d, data_type::BOOL) => ConstData::I64(match d {
            ConstData::F32(v) => v.iter().map(|&f| i64::from(f != 0.0)).collect(),
            ConstData::I64(v) => v.iter().map(|&i| i64::from(i != 0)).collect(),
        }),
        (d, data_type::INT64 | data_type::INT32 | data_type::INT8 | data_type::UINT8) => {
            ConstData::I64(match d {
                // `as` truncates toward zero (and saturates), like numpy's astype for in-range values.
                ConstData::F32(v) => v.iter().map(|&f| f as i64).collect(),
                ConstData::I64(v) => v,
            })
        }
        (_, other) => {
            return Err(ctx.err(format!(
                "a cast to {} ({other}) is not supported",
                data_type::name(other)
            )))
        }
    };
    bind_constant(ctx, shape, cast)
}
