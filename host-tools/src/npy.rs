//! Reading and writing `.npy` files as f32 arrays, with errors that name the file.

use std::path::Path;

use anyhow::{bail, Context, Result};
use npyz::{DType, NpyFile, TypeChar, WriterBuilder};

/// A float32 array read from a `.npy` file.
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Reads a float32 `.npy` file (C order).
pub fn read_f32(path: &Path) -> Result<Array> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (npy, shape) = open_c_order(path, &bytes)?;
    match npy.dtype() {
        DType::Plain(t) if t.type_char() == TypeChar::Float && t.size_field() == 4 => {}
        other => bail!(
            "{} holds {} values; Ember reads float32 inputs (use x.astype(np.float32))",
            path.display(),
            describe(&other)
        ),
    }
    let data: Vec<f32> = npy
        .into_vec()
        .with_context(|| format!("cannot decode the float32 data of {}", path.display()))?;
    Ok(Array { shape, data })
}

/// Parses a float32 `.npy` held in memory (the demo's bundled data).
pub fn parse_f32(bytes: &[u8], what: &str) -> Result<Array> {
    let npy = NpyFile::new(bytes).with_context(|| format!("{what} is not a valid .npy file"))?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let data = npy
        .into_vec::<f32>()
        .with_context(|| format!("{what} does not hold float32 values"))?;
    Ok(Array { shape, data })
}

/// Parses an int64 `.npy` held in memory.
pub fn parse_i64(bytes: &[u8], what: &str) -> Result<Vec<i64>> {
    let npy = NpyFile::new(bytes).with_context(|| format!("{what} is not a valid .npy file"))?;
    npy.into_vec::<i64>()
        .with_context(|| format!("{what} does not hold int64 values"))
}

/// The `.npy` file `bytes` read from `path`, with its shape, checked to be in C order.
fn open_c_order<'a>(path: &Path, bytes: &'a [u8]) -> Result<(NpyFile<&'a [u8]>, Vec<usize>)> {
    let npy = NpyFile::new(bytes)
        .with_context(|| format!("{} is not a valid .npy file", path.display()))?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    if npy.order() != npyz::Order::C {
        bail!(
            "{} is stored in Fortran order; save it in C order (np.ascontiguousarray)",
            path.display()
        );
    }
    Ok((npy, shape))
}

fn describe(d: &DType) -> String {
    match d {
        DType::Plain(t) => format!("{t}"),
        _ => "structured".to_string(),
    }
}

/// An array of any element type Ember has, as little-endian bytes of that type.
pub struct Typed {
    pub shape: Vec<usize>,
    pub dtype: ember_core::DType,
    pub bytes: Vec<u8>,
}

/// Reads a `.npy` file of float32/64, (u)int8/16/32/64 or bool (C order), keeping its element type.
pub fn read_typed(path: &Path) -> Result<Typed> {
    use ember_core::DType as E;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (npy, shape) = open_c_order(path, &bytes)?;
    let dtype = npy.dtype();
    let kind = match &dtype {
        DType::Plain(t) => (t.type_char(), t.size_field()),
        other => bail!("{} holds {} values", path.display(), describe(other)),
    };
    let what = || format!("cannot decode the data of {}", path.display());
    macro_rules! le {
        ($t:ty) => {
            npy.into_vec::<$t>()
                .with_context(what)?
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>()
        };
    }
    let (dtype, bytes) = match kind {
        (TypeChar::Float, 4) => (E::F32, le!(f32)),
        (TypeChar::Float, 8) => (E::F64, le!(f64)),
        (TypeChar::Int, 1) => (E::I8, le!(i8)),
        (TypeChar::Int, 2) => (E::I16, le!(i16)),
        (TypeChar::Int, 4) => (E::I32, le!(i32)),
        (TypeChar::Int, 8) => (E::I64, le!(i64)),
        (TypeChar::Uint, 1) => (E::U8, le!(u8)),
        (TypeChar::Uint, 2) => (E::U16, le!(u16)),
        (TypeChar::Uint, 4) => (E::U32, le!(u32)),
        (TypeChar::Uint, 8) => (E::U64, le!(u64)),
        (TypeChar::Bool, 1) => (
            E::Bool,
            npy.into_vec::<bool>()
                .with_context(what)?
                .into_iter()
                .map(u8::from)
                .collect(),
        ),
        _ => bail!(
            "{} holds {} values; Ember reads float32/64, (u)int8/16/32/64 and bool",
            path.display(),
            describe(&dtype)
        ),
    };
    Ok(Typed {
        shape,
        dtype,
        bytes,
    })
}

/// The elements of little-endian `bytes` of `dtype` as f64 (exact for every integer below 2^53).
pub fn to_f64(dtype: ember_core::DType, bytes: &[u8]) -> Vec<f64> {
    use ember_core::DType as E;
    let n = dtype.size();
    bytes
        .chunks_exact(n)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(c);
            match dtype {
                E::F32 => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                E::F64 => f64::from_le_bytes(b),
                E::F16 => ember_core::half::f16::from_le_bytes([c[0], c[1]]).to_f64(),
                E::I8 => f64::from(c[0] as i8),
                E::I16 => f64::from(i16::from_le_bytes([c[0], c[1]])),
                E::I32 => f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                E::I64 => i64::from_le_bytes(b) as f64,
                E::U8 | E::Bool | E::U16 | E::U32 => u64::from_le_bytes(b) as f64,
                E::U64 => u64::from_le_bytes(b) as f64,
            }
        })
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
