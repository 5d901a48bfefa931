//! Reading and writing `.npy` files as f32 arrays, with errors that name the file.

use std::path::Path;

use anyhow::{bail, Context, Result};
use npyz::WriterBuilder;

/// A float32 array read from a `.npy` file.
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Reads a float32 `.npy` file.
pub fn read_f32(path: &Path) -> Result<Array> {
    let t = read_typed(path)?;
    float32(t, &path.display().to_string())
}

/// Parses a float32 `.npy` held in memory (the demo's bundled data).
pub fn parse_f32(bytes: &[u8], what: &str) -> Result<Array> {
    float32(parse_typed(bytes, what)?, what)
}

/// Parses an int64 `.npy` held in memory.
pub fn parse_i64(bytes: &[u8], what: &str) -> Result<Vec<i64>> {
    let t = parse_typed(bytes, what)?;
    if t.dtype != ember_core::DType::I64 {
        bail!("{what} holds {} values, not int64", t.dtype.name());
    }
    Ok(t.bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

fn float32(t: Typed, what: &str) -> Result<Array> {
    if t.dtype != ember_core::DType::F32 {
        bail!(
            "{what} holds {} values; Ember reads float32 inputs (use x.astype(np.float32))",
            t.dtype.name()
        );
    }
    let data = t
        .bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(Array {
        shape: t.shape,
        data,
    })
}

/// An array of any element type Ember has, as little-endian bytes of that type.
#[derive(Clone, Debug)]
pub struct Typed {
    pub shape: Vec<usize>,
    pub dtype: ember_core::DType,
    pub bytes: Vec<u8>,
}

/// Reads a `.npy` file of float32/64, (u)int8/16/32/64 or bool, keeping its element type (Fortran-order
/// and big-endian arrays are read into row-major little-endian order).
pub fn read_typed(path: &Path) -> Result<Typed> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_typed(&bytes, &path.display().to_string())
}

/// [`read_typed`] of `.npy` bytes held in memory, `what` naming them in errors. The header is read by
/// the converter's checked reader: a shape whose size overflows or exceeds what the file holds is an
/// error before anything is allocated.
pub fn parse_typed(bytes: &[u8], what: &str) -> Result<Typed> {
    use ember_convert::weights::ElementType as T;
    use ember_core::DType as E;
    let t = ember_convert::weights::npy::read(bytes, &ember_convert::weights::Limits::default())
        .map_err(|why| anyhow::anyhow!("{what} is not a .npy array Ember reads: {why}"))?;
    let dtype = match t.dtype() {
        T::F32 => E::F32,
        T::F64 => E::F64,
        T::I8 => E::I8,
        T::I16 => E::I16,
        T::I32 => E::I32,
        T::I64 => E::I64,
        T::U8 => E::U8,
        T::U16 => E::U16,
        T::U32 => E::U32,
        T::U64 => E::U64,
        T::Bool => E::Bool,
        other => {
            bail!("{what} holds {other} values; Ember reads float32/64, (u)int8/16/32/64 and bool")
        }
    };
    Ok(Typed {
        shape: t.shape().to_vec(),
        dtype,
        bytes: t.bytes().to_vec(),
    })
}

/// The elements of little-endian `bytes` of `dtype` as f64 (exact for every integer below 2^53).
pub fn to_f64(dtype: ember_core::DType, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(dtype.size())
        .map(|c| ember_core::ops::element::scalar_value(dtype, c))
        .collect()
}

/// Writes `bytes` (little-endian elements of `dtype`) as a `.npy` of that type.
pub fn write_typed(
    path: &Path,
    shape: &[usize],
    dtype: ember_core::DType,
    bytes: &[u8],
) -> Result<()> {
    use ember_core::DType as E;
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut out = Vec::new();
    macro_rules! put {
        ($t:ty, $n:expr) => {{
            let mut w = npyz::WriteOptions::<$t>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut out)
                .begin_nd()?;
            w.extend(bytes.chunks_exact($n).map(|c| {
                let mut a = [0u8; $n];
                a.copy_from_slice(c);
                <$t>::from_le_bytes(a)
            }))?;
            w.finish()?;
        }};
    }
    match dtype {
        E::F32 => put!(f32, 4),
        E::F64 => put!(f64, 8),
        E::I8 => put!(i8, 1),
        E::I16 => put!(i16, 2),
        E::I32 => put!(i32, 4),
        E::I64 => put!(i64, 8),
        E::U8 => put!(u8, 1),
        E::U16 => put!(u16, 2),
        E::U32 => put!(u32, 4),
        E::U64 => put!(u64, 8),
        E::Bool => {
            let mut w = npyz::WriteOptions::<bool>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut out)
                .begin_nd()?;
            w.extend(bytes.iter().map(|&b| b != 0))?;
            w.finish()?;
        }
        E::F16 => bail!("writing float16 .npy files is not supported; cast the output to float32"),
    }
    crate::emit::write(path, &out)
}
