//! ONNX `Range` of constant scalars: a constant at conversion time.

use crate::ir::ConstData;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

use super::shape::bind_constant;

/// Most elements a `Range` may produce, 2^24 (128 MiB as int64; position ids, the use real models make
/// of it, are a few thousand): a hostile model's range is an error before anything is allocated.
const MAX_LEN: f64 = (1u64 << 24) as f64;

/// Imports `Range`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let ids = [
        ctx.input(0, "start")?,
        ctx.input(1, "limit")?,
        ctx.input(2, "delta")?,
    ];
    let scalar = |i: usize| -> Result<ConstData, ConvertError> {
        let t = ctx.graph().tensor(ids[i]);
        match &t.data {
            Some(d) if d.len() == 1 => Ok(d.clone()),
            _ => Err(ctx.err(format!(
                "a runtime or non-scalar input {i} (\"{}\") is not supported; it must be a \
                 constant scalar (Range is evaluated at conversion time)",
                t.name
            ))),
        }
    };
    let (start, limit, delta) = (scalar(0)?, scalar(1)?, scalar(2)?);
    let data = match (start, limit, delta) {
        (ConstData::I64(s), ConstData::I64(l), ConstData::I64(d)) => {
            let (s, l, d) = (s[0], l[0], d[0]);
            let n = count(ctx, s as f64, l as f64, d as f64)?;
            ConstData::I64((0..n as i64).map(|i| s + i * d).collect())
        }
        (ConstData::F32(s), ConstData::F32(l), ConstData::F32(d)) => {
            let (s, l, d) = (s[0], l[0], d[0]);
            let n = count(ctx, f64::from(s), f64::from(l), f64::from(d))?;
            ConstData::F32((0..n).map(|i| s + i as f32 * d).collect())
        }
        _ => return Err(ctx.err("start, limit and delta must have the same type")),
    };
    bind_constant(ctx, vec![data.len()], data)
}

/// `max(ceil((limit - start) / delta), 0)`.
fn count(ctx: &NodeCtx<'_>, start: f64, limit: f64, delta: f64) -> Result<usize, ConvertError> {
    if delta == 0.0 {
        return Err(ctx.err("delta is 0"));
    }
    let n = ((limit - start) / delta).ceil().max(0.0);
    if n.is_nan() || n > MAX_LEN {
        return Err(ctx.err(format!(
            "the range would hold {n} elements; Ember folds at most 2^24"
        )));
    }
    Ok(n as usize)
}
