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
    let npy = NpyFile::new(&bytes[..])
        .with_context(|| format!("{} is not a valid .npy file", path.display()))?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    if npy.order() != npyz::Order::C {
        bail!(
            "{} is stored in Fortran order; save it in C order (np.ascontiguousarray)",
            path.display()
        );
    }
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

/// Writes a float32 `.npy` file.
pub fn write_f32(path: &Path, shape: &[usize], data: &[f32]) -> Result<()> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut out = Vec::new();
    {
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&shape)
            .writer(&mut out)
            .begin_nd()?;
        w.extend(data.iter().copied())?;
        w.finish()?;
    }
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

fn describe(d: &DType) -> String {
    match d {
        DType::Plain(t) => format!("{t}"),
        _ => "structured".to_string(),
    }
}
