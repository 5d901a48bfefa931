//! Reads the data of a `TensorProto` (an initializer or a `Constant` value) into a [`ConstData`].
//!
//! FLOAT and DOUBLE become f32; INT64, INT32 and BOOL become i64 (only consumed at conversion time, as
//! shapes, pads or axes). Data stored outside the file is rejected. Sizes are checked against the
//! dims before anything is allocated, so a hostile file cannot make the converter allocate more
//! than the bytes it holds.

use crate::ir::shape::{dims_from_i64, numel};
use crate::ir::ConstData;
use crate::onnx::proto::{data_type, TensorProto, DATA_LOCATION_EXTERNAL};
use crate::ConvertError;

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
    let data = match t.data_type {
        data_type::FLOAT if raw => ConstData::F32(
            le_chunks::<4>(&t.raw_data, n, mismatch)?
                .map(f32::from_le_bytes)
                .collect(),
        ),
        data_type::FLOAT => {
            check_len(t.float_data.len(), n, mismatch)?;
            ConstData::F32(t.float_data.clone())
        }
        data_type::DOUBLE if raw => ConstData::F32(
            le_chunks::<8>(&t.raw_data, n, mismatch)?
                .map(|b| f64::from_le_bytes(b) as f32)
                .collect(),
        ),
        data_type::DOUBLE => {
            check_len(t.double_data.len(), n, mismatch)?;
            ConstData::F32(t.double_data.iter().map(|&d| d as f32).collect())
        }
        data_type::INT64 if raw => ConstData::I64(
            le_chunks::<8>(&t.raw_data, n, mismatch)?
                .map(i64::from_le_bytes)
                .collect(),
        ),
        data_type::INT64 => {
            check_len(t.int64_data.len(), n, mismatch)?;
            ConstData::I64(t.int64_data.clone())
        }
        data_type::INT32 if raw => ConstData::I64(
            le_chunks::<4>(&t.raw_data, n, mismatch)?
                .map(|b| i64::from(i32::from_le_bytes(b)))
                .collect(),
        ),
        data_type::INT32 => {
            check_len(t.int32_data.len(), n, mismatch)?;
            ConstData::I64(t.int32_data.iter().map(|&v| i64::from(v)).collect())
        }
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
