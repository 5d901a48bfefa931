//! The ONNX initializers the quantizer reads (FLOAT weights) and writes (quantized weights, scales
//! and zero points), shared by the QDQ rewrite and the BatchNormalization fold before it.

use crate::onnx::proto::{data_type, TensorProto};

/// A FLOAT initializer.
pub(super) fn tensor_f32(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    let raw = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    TensorProto::from_raw(name, dims, data_type::FLOAT, raw)
}

/// An INT8 initializer.
pub(super) fn tensor_i8(name: &str, dims: &[i64], v: &[i8]) -> TensorProto {
    let raw = v.iter().map(|&x| x as u8).collect();
    TensorProto::from_raw(name, dims, data_type::INT8, raw)
}

/// An INT32 initializer.
pub(super) fn tensor_i32(name: &str, dims: &[i64], v: &[i32]) -> TensorProto {
    let raw = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    TensorProto::from_raw(name, dims, data_type::INT32, raw)
}

/// The values of a FLOAT initializer.
pub(super) fn float_values(t: &TensorProto) -> Result<Vec<f32>, String> {
    match crate::onnx::tensor::read_tensor(t, &t.name) {
        Ok((_, crate::ir::ConstData::F32(v))) => Ok(v),
        Ok(_) => Err("is not a FLOAT tensor".into()),
        Err(e) => Err(e.to_string()),
    }
}
