//! Hugging Face safetensors: an 8-byte little-endian header length, a JSON header naming each
//! tensor's dtype, shape and byte range, then the data. Parsed by the `safetensors` crate (which
//! checks that the ranges tile the data exactly); the tensors borrow the file's bytes.

use ::safetensors::tensor::{Dtype, SafeTensors};

use super::{Checkpoint, ElementType, Tensor};
use crate::ConvertError;

/// True when `bytes` start like a safetensors file (a plausible header length, then `{`).
pub fn looks_safetensors(bytes: &[u8]) -> bool {
    let Some(len) = bytes.get(..8) else {
        return false;
    };
    let n = u64::from_le_bytes(len.try_into().unwrap_or([0xff; 8]));
    n >= 2 && n <= (bytes.len() as u64 - 8) && bytes.get(8) == Some(&b'{')
}

/// The element type of a safetensors dtype.
pub fn element_type(d: Dtype) -> Result<ElementType, ConvertError> {
    use ElementType as E;
    Ok(match d {
        Dtype::BOOL => E::Bool,
        Dtype::U8 => E::U8,
        Dtype::I8 => E::I8,
        Dtype::U16 => E::U16,
        Dtype::I16 => E::I16,
        Dtype::U32 => E::U32,
        Dtype::I32 => E::I32,
        Dtype::U64 => E::U64,
        Dtype::I64 => E::I64,
        Dtype::F16 => E::F16,
        Dtype::BF16 => E::BF16,
        Dtype::F32 => E::F32,
        Dtype::F64 => E::F64,
        Dtype::F8_E4M3 => E::F8E4M3,
        Dtype::F8_E4M3FNUZ => E::F8E4M3Fnuz,
        Dtype::F8_E5M2 => E::F8E5M2,
        Dtype::F8_E5M2FNUZ => E::F8E5M2Fnuz,
        Dtype::F8_E8M0 => E::F8E8M0,
        Dtype::F4 => E::F4,
        Dtype::F6_E2M3 => E::F6E2M3,
        Dtype::F6_E3M2 => E::F6E3M2,
        Dtype::C64 => E::C64,
        other => {
            return Err(ConvertError::checkpoint(format!(
                "safetensors dtype {other} is not one Ember knows"
            )))
        }
    })
}

/// Reads a safetensors file.
pub fn read(bytes: &[u8]) -> Result<Checkpoint<'_>, ConvertError> {
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| ConvertError::checkpoint(format!("not a valid safetensors file: {e}")))?;
    let mut ckpt = Checkpoint::new();
    for (name, view) in st.iter() {
        let dtype = element_type(view.dtype())
            .map_err(|e| ConvertError::checkpoint(format!("tensor \"{name}\": {e}")))?;
        let t = Tensor::borrowed(dtype, view.shape().to_vec(), view.data())
            .map_err(|e| ConvertError::checkpoint(format!("tensor \"{name}\": {e}")))?;
        ckpt.insert(name, t)?;
    }
    Ok(ckpt)
}
