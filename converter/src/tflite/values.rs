//! Reading a tensor's element type, quantization parameters, constant bytes and integers from the
//! file, each checked against the tensor's shape.

use ember_core::DType;

use super::schema::{BufferRef, TensorRef, TensorType};
use super::{FileQuant, OpError, MAX_ITEMS};

/// The IR dtype of a TFLite element type.
pub(crate) fn ir_dtype(t: TensorType) -> Result<DType, OpError> {
    Ok(match t {
        TensorType::Float32 | TensorType::Float16 => DType::F32,
        TensorType::Int8 => DType::I8,
        TensorType::Uint8 => DType::U8,
        TensorType::Int32 => DType::I32,
        TensorType::Int64 => DType::I64,
        TensorType::Bool => DType::Bool,
        other => {
            return Err(OpError(format!(
                "element type {other:?} is not supported (float32, float16 constants, int8, uint8, \
                 int32, int64, bool)"
            )))
        }
    })
}

/// Little-endian integers of an integer element type.
pub(super) fn ints(bytes: &[u8], t: TensorType) -> Option<Vec<i64>> {
    Some(match t {
        TensorType::Int8 => bytes.iter().map(|&b| i64::from(b as i8)).collect(),
        TensorType::Uint8 | TensorType::Bool => bytes.iter().map(|&b| i64::from(b)).collect(),
        TensorType::Int16 => bytes
            .chunks_exact(2)
            .map(|b| i64::from(i16::from_le_bytes([b[0], b[1]])))
            .collect(),
        TensorType::Int32 => bytes
            .chunks_exact(4)
            .map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        TensorType::Int64 => bytes
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect(),
        _ => return None,
    })
}

/// `(q - zp) * scale`, per channel along `axis` when there are several scales.
pub(super) fn dequantized(
    q: &[i64],
    shape: &[usize],
    scales: &[f32],
    zps: &[i64],
    axis: usize,
) -> Vec<f32> {
    let inner: usize = if scales.len() == 1 {
        q.len().max(1)
    } else {
        shape.get(axis + 1..).map_or(1, |s| s.iter().product())
    };
    q.iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = if scales.len() == 1 {
                0
            } else {
                (i / inner.max(1)) % scales.len()
            };
            (v - zps[c]) as f32 * scales[c]
        })
        .collect()
}

/// The tensor's quantization, checked: as many zero points as scales (or one shared), finite
/// positive scales, and per-channel parameters along a dim of that length.
pub(super) fn read_quant(t: &TensorRef<'_>, shape: &[usize]) -> Result<Option<FileQuant>, String> {
    let Some(q) = t.quantization().map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    if q.details().map_err(|e| e.to_string())?.is_some() {
        return Err("custom quantization details are not supported".into());
    }
    let scales: Vec<f32> = q
        .scale()
        .map_err(|e| e.to_string())?
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    if scales.is_empty() {
        // min/max only (a float model's leftover calibration ranges): not quantized.
        return Ok(None);
    }
    if scales.len() > MAX_ITEMS {
        return Err("too many scales".into());
    }
    let mut zps: Vec<i64> = q
        .zero_point()
        .map_err(|e| e.to_string())?
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    if zps.is_empty() {
        zps = vec![0; scales.len()];
    }
    if let Some(z) = zps.iter().find(|z| i32::try_from(**z).is_err()) {
        return Err(format!("zero point {z} is outside the int32 range"));
    }
    if zps.len() != scales.len() {
        return Err(format!(
            "{} scales but {} zero points",
            scales.len(),
            zps.len()
        ));
    }
    if let Some(s) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(format!("scale {s} is not a positive finite number"));
    }
    let axis = usize::try_from(q.quantized_dimension().map_err(|e| e.to_string())?)
        .map_err(|_| "negative quantized_dimension".to_string())?;
    if scales.len() > 1 && shape.get(axis) != Some(&scales.len()) {
        return Err(format!(
            "{} per-channel scales along dim {axis} of shape {shape:?}",
            scales.len()
        ));
    }
    Ok(Some((scales, zps, axis)))
}

/// Buffer `b`'s bytes: its `data` vector, or (files over 2 GB, schema 3c) an offset and size into
/// the file. `None` for an empty buffer (a tensor computed at run time).
pub(super) fn buffer_data<'a>(
    bytes: &'a [u8],
    buffers: Option<&planus::Vector<'a, planus::Result<BufferRef<'a>>>>,
    b: usize,
) -> Result<Option<&'a [u8]>, String> {
    let buf = buffers
        .and_then(|v| v.get(b))
        .ok_or_else(|| format!("buffer {b} is outside the model's buffers"))?
        .map_err(|e| e.to_string())?;
    if let Some(data) = buf.data().map_err(|e| e.to_string())? {
        return Ok((!data.is_empty()).then_some(data));
    }
    let (offset, size) = (
        buf.offset().map_err(|e| e.to_string())?,
        buf.size().map_err(|e| e.to_string())?,
    );
    if offset <= 1 {
        return Ok(None);
    }
    let start = usize::try_from(offset).map_err(|_| "buffer offset too large".to_string())?;
    let end = usize::try_from(size)
        .ok()
        .and_then(|s| start.checked_add(s))
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| {
            format!("buffer {b} (offset {offset}, {size} bytes) lies past the file's end")
        })?;
    Ok(Some(&bytes[start..end]))
}
