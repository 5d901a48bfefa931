//! What the blob says about a tensor's elements: their type, and the largest rank a tensor may have.

use serde::{Deserialize, Serialize};

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 16-bit IEEE float (storage only for now).
    F16,
    /// Signed 8-bit integer (quantized).
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 32-bit integer (biases of quantized ops).
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Boolean, one byte per element holding 0 or 1.
    Bool,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// 64-bit IEEE float (element-wise, comparison, cast and data-movement ops only).
    F64,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// Lower-case name, as ONNX and numpy spell it (`float32`, `int64`, `bool`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::Bool => "bool",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F64 => "float64",
        }
    }
}

/// Largest tensor rank Ember supports.
pub const MAX_RANK: usize = 6;
