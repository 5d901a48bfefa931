//! Reads the data of a `TensorProto` (an initializer or a `Constant` value) into a [`ConstData`].
//!
//! FLOAT and DOUBLE values are held as f32, every integer type and BOOL as i64; the tensor keeps its
//! ONNX type as a [`DType`], in which lowering writes it if an op reads it at run time. Data stored outside the file is rejected. Sizes are checked against the
//! dims before anything is allocated, so a hostile file cannot make the converter allocate more
//! than the bytes it holds.

use ember_core::half::f16;

use crate::ir::shape::{dims_from_i64, numel};
use crate::ir::{ConstData, DType};
use crate::onnx::proto::{data_type, TensorProto, DATA_LOCATION_EXTERNAL};
use crate::ConvertError;

/// The Ember dtype of an ONNX element type, if Ember has one.
pub fn dtype_of(t: i32) -> Option<DType> {
    Some(match t {
        data_type::FLOAT => DType::F32,
        data_type::DOUBLE => DType::F64,
        data_type::INT8 => DType::I8,
        data_type::UINT8 => DType::U8,
        data_type::INT16 => DType::I16,
        data_type::UINT16 => DType::U16,
        data_type::INT32 => DType::I32,
        data_type::UINT32 => DType::U32,
        data_type::INT64 => DType::I64,
        data_type::UINT64 => DType::U64,
        data_type::BOOL => DType::Bool,
        data_type::FLOAT16 => DType::F16,
        _ => return None,
    })
}

/// The ONNX element type of an Ember dtype.
pub fn onnx_type(d: DType) -> i32 {
    match d {
        DType::F32 => data_type::FLOAT,
        DType::F64 => data_type::DOUBLE,
        DType::I8 => data_type::INT8,
        DType::U8 => data_type::UINT8,
        DType::I16 => data_type::INT16,
        DType::U16 => data_type::UINT16,
        DType::I32 => data_type::INT32,
        DType::U32 => data_type::UINT32,
        DType::I64 => data_type::INT64,
        DType::U64 => data_type::UINT64,
        DType::Bool => data_type::BOOL,
        DType::F16 => data_type::FLOAT16,
    }
}

/// Dims, data and dtype of a tensor proto. `name` is used in messages (the proto's own name may be
/// empty).
pub fn read_tensor_typed(
    t: &TensorProto,
    name: &str,
) -> Result<(Vec<usize>, ConstData, DType), ConvertError> {
    let (shape, data) = read_tensor(t, name)?;
    // read_tensor only accepts types that have a dtype.
    let dtype = dtype_of(t.data_type).unwrap_or(data.dtype());
    Ok((shape, data, dtype))
}

/// Dims and data of a tensor proto. `name` is used in messages (the proto's own name may be empty).
pub fn read_tensor(t: &TensorProto, name: &str) -> Result<(Vec<usize>, ConstData), ConvertError> {
    let err = |reason: String| ConvertError::Tensor {
        name: name.to_string(),
        reason,
    };
    if t.data_location == DATA_LOCATION_EXTERNAL || !t.external_data.is_empty() {
        let location = t
            .external_data
            .iter()
            .find(|e| e.key == "location")
            .map(|e| e.value.as_str())
            .unwrap_or("?");
        return Err(err(format!(
            "its data is stored outside the model file (external data, location \"{location}\"), \
             which the converter does not read; save the model with its weights inside, e.g. \
             onnx.save_model(model, path, save_as_external_data=False)"
        )));
    }
    let shape = dims_from_i64(&t.dims).map_err(err)?;
    let n = numel(&shape).map_err(err)?;
    let raw = !t.raw_data.is_empty();
    let mismatch = |found: usize| {
        err(format!(
            "dims {shape:?} need {n} elements but the data holds {found}"
        ))
    };
    let src = Elements {
        raw: &t.raw_data,
        n,
        mismatch: &mismatch,
    };
    let data = match t.data_type {
        data_type::FLOAT => ConstData::F32(src.read(&t.float_data, f32::from_le_bytes, |v| v)?),
        data_type::DOUBLE => ConstData::F32(src.read(
            &t.double_data,
            |b| f64::from_le_bytes(b) as f32,
            |d| d as f32,
        )?),
        data_type::INT64 => ConstData::I64(src.read(&t.int64_data, i64::from_le_bytes, |v| v)?),
        data_type::INT32 => ConstData::I64(src.read(
            &t.int32_data,
            |b| i64::from(i32::from_le_bytes(b)),
            i64::from,
        )?),
        data_type::INT8 | data_type::UINT8 | data_type::INT16 | data_type::UINT16 if raw => {
            let size = if matches!(t.data_type, data_type::INT8 | data_type::UINT8) {
                1
            } else {
                2
            };
            if raw_len_mismatch(t.raw_data.len(), size, n) {
                return Err(mismatch(t.raw_data.len() / size));
            }
            ConstData::I64(match t.data_type {
                data_type::INT8 => t.raw_data.iter().map(|&b| i64::from(b as i8)).collect(),
                data_type::UINT8 => t.raw_data.iter().map(|&b| i64::from(b)).collect(),
                data_type::INT16 => le_chunks::<2>(&t.raw_data, n, mismatch)?
                    .map(|b| i64::from(i16::from_le_bytes(b)))
                    .collect(),
                _ => le_chunks::<2>(&t.raw_data, n, mismatch)?
                    .map(|b| i64::from(u16::from_le_bytes(b)))
                    .collect(),
            })
        }
        data_type::INT8 | data_type::UINT8 | data_type::INT16 | data_type::UINT16 => {
            // Small integer types are stored in int32_data, one value each.
            check_len(t.int32_data.len(), n, mismatch)?;
            ConstData::I64(t.int32_data.iter().map(|&v| i64::from(v)).collect())
        }
        data_type::UINT32 if raw => ConstData::I64(
            le_chunks::<4>(&t.raw_data, n, mismatch)?
                .map(|b| i64::from(u32::from_le_bytes(b)))
                .collect(),
        ),
        data_type::UINT32 | data_type::UINT64 if !raw => {
            check_len(t.uint64_data.len(), n, mismatch)?;
            ConstData::I64(t.uint64_data.iter().map(|&v| v as i64).collect())
        }
        data_type::UINT64 => ConstData::I64(
            le_chunks::<8>(&t.raw_data, n, mismatch)?
                .map(|b| u64::from_le_bytes(b) as i64)
                .collect(),
        ),
        // float16 bits: two bytes each raw, else one value per int32.
        data_type::FLOAT16 => ConstData::F32(src.read(
            &t.int32_data,
            |b| f16::from_le_bytes(b).to_f32(),
            |b| f16::from_bits(b as u16).to_f32(),
        )?),
        data_type::BOOL if raw => {
            check_len(t.raw_data.len(), n, mismatch)?;
            ConstData::I64(t.raw_data.iter().map(|&b| i64::from(b != 0)).collect())
        }
        data_type::BOOL => {
            check_len(t.int32_data.len(), n, mismatch)?;
            ConstData::I64(t.int32_data.iter().map(|&b| i64::from(b != 0)).collect())
        }
        other => {
            return Err(err(format!(
                "data type {} ({other}) is not supported; Ember converts FLOAT models (with INT64 \
                 shape constants)",
                data_type::name(other)
            )))
        }
    };
    Ok((shape, data))
}

/// Where a tensor's `n` elements are read from: its `raw_data` when it has some, else a typed field.
struct Elements<'t, M> {
    raw: &'t [u8],
    n: usize,
    mismatch: &'t M,
}

impl<M: Fn(usize) -> ConvertError> Elements<'_, M> {
    /// The elements: `N` little-endian bytes each read by `from_raw`, or each of `values` read by
    /// `from_value`; exactly `n` of them.
    fn read<const N: usize, V: Copy, T>(
        &self,
        values: &[V],
        from_raw: impl Fn([u8; N]) -> T,
        from_value: impl Fn(V) -> T,
    ) -> Result<Vec<T>, ConvertError> {
        if self.raw.is_empty() {
            check_len(values.len(), self.n, self.mismatch)?;
            Ok(values.iter().map(|&v| from_value(v)).collect())
        } else {
            Ok(le_chunks::<N>(self.raw, self.n, self.mismatch)?
                .map(from_raw)
                .collect())
        }
    }
}

fn raw_len_mismatch(len: usize, size: usize, n: usize) -> bool {
    len != n.saturating_mul(size)
}

fn check_len(
    found: usize,
    n: usize,
    mismatch: impl Fn(usize) -> ConvertError,
) -> Result<(), ConvertError> {
    if found == n {
        Ok(())
    } else {
        Err(mismatch(found))
    }
}

/// The `N`-byte little-endian elements of `raw`, after checking there are exactly `n` of them.
fn le_chunks<const N: usize>(
    raw: &[u8],
    n: usize,
    mismatch: impl Fn(usize) -> ConvertError,
) -> Result<impl Iterator<Item = [u8; N]> + '_, ConvertError> {
    if !raw.len().is_multiple_of(N) || raw.len() / N != n {
        return Err(mismatch(raw.len() / N));
    }
    Ok(raw.chunks_exact(N).map(|c| {
        let mut b = [0u8; N];
        b.copy_from_slice(c);
        b
    }))
}
