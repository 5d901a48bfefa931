//! ONNX `Constant`: the value becomes a constant tensor (stored with the weights if an op reads it,
//! consumed at conversion time if it is a shape, pads or axes).

use crate::ir::{ConstData, DType};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Constant`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let value = if let Some(t) = ctx.attr_tensor("value")? {
        t
    } else if let Some(v) = ctx.attr_float("value_float")? {
        (vec![], ConstData::F32(vec![v]), DType::F32)
    } else if let Some(v) = ctx.attr_floats("value_floats")? {
        (vec![v.len()], ConstData::F32(v), DType::F32)
    } else if let Some(v) = ctx.attr_int("value_int")? {
        (vec![], ConstData::I64(vec![v]), DType::I64)
    } else if let Some(v) = ctx.attr_ints("value_ints")? {
        (vec![v.len()], ConstData::I64(v), DType::I64)
    } else {
        let found: Vec<&str> = ctx.node.attribute.iter().map(|a| a.name.as_str()).collect();
        return Err(ctx.err(format!(
            "needs a value, value_float(s) or value_int(s) attribute (found: {}); sparse and string \
             constants are not supported",
            found.join(", ")
        )));
    };
    let (shape, data, dtype) = value;
    super::shape::bind_constant_of(ctx, shape, data, dtype)
}
