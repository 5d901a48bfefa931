//! numpy `.npz`: a zip of `.npy` files (`np.savez`, stored; `np.savez_compressed`, deflated), one
//! tensor per entry, named after the entry without `.npy`.
//!
//! The `.npy` header (`\x93NUMPY`, version, length, then a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`) is parsed here rather than by
//! `npyz`, whose header reader multiplies the shape without overflow checks; sizes are checked
//! before anything is read. Fortran-order arrays are transposed into row-major order, big-endian ones
//! byte-swapped. Stored entries of little-endian C-order arrays are borrowed from the file.

use super::archive::Archive;
use super::gather::{CopyBudget, Storage, View};
use super::{numel, Bytes, Checkpoint, ElementType, Limits, Tensor};
use crate::ConvertError;

/// A parsed `.npy` header.
#[derive(Debug, PartialEq)]
struct Header {
    dtype: ElementType,
    big_endian: bool,
    fortran: bool,
    shape: Vec<usize>,
    /// Offset of the data in the `.npy` bytes.
    data_start: usize,
}

fn element_type(descr: &str) -> Option<(ElementType, bool)> {
    use ElementType as E;
    let (order, ty) = descr.split_at_checked(1)?;
    let big = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return None,
    };
    let t = match ty {
        "b1" => E::Bool,
        "u1" => E::U8,
        "i1" => E::I8,
        "u2" => E::U16,
        "i2" => E::I16,
        "u4" => E::U32,
        "i4" => E::I32,
        "u8" => E::U64,
        "i8" => E::I64,
        "f2" => E::F16,
        "f4" => E::F32,
        "f8" => E::F64,
        "c8" => E::C64,
        "c16" => E::C128,
        _ => return None,
    };
    Some((t, big && t.swap_unit() > 1))
}

/// The value of `key` in the header's dict literal: the text up to the next top-level comma.
fn field<'h>(dict: &'h str, key: &str) -> Option<&'h str> {
    let at = dict
        .find(&format!("'{key}'"))
        .or_else(|| dict.find(&format!("\"{key}\"")))?;
    let rest = dict[at + key.len() + 2..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let mut depth = 0i32;
    let mut end = rest.len();
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    Some(rest[..end].trim())
}

fn parse_header(npy: &[u8]) -> Result<Header, String> {
    let Some(rest) = npy.strip_prefix(b"\x93NUMPY") else {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    };
    let (len, text_start) = match rest.first() {
        Some(1) => (
            rest.get(2..4)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize),
            10,
        ),
        Some(2 | 3) => (
            rest.get(2..6)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
            12,
        ),
        _ => return Err("a .npy version Ember does not know".into()),
    };
    let data_start = len
        .and_then(|l| l.checked_add(text_start))
        .filter(|&e| e <= npy.len())
        .ok_or("its header runs past the end")?;
    let dict =
        std::str::from_utf8(&npy[text_start..data_start]).map_err(|_| "its header is not text")?;
    let descr = field(dict, "descr").ok_or("its header has no descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let (dtype, big_endian) = element_type(descr).ok_or_else(|| {
        format!("dtype {descr:?} is not one Ember reads (bool, integers, f2/f4/f8, complex)")
    })?;
    let fortran = match field(dict, "fortran_order") {
        Some("True") => true,
        Some("False") => false,
        _ => return Err("its header has no fortran_order".into()),
    };
    let shape = field(dict, "shape").ok_or("its header has no shape")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or("its shape is not a tuple")?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|d| d.parse::<usize>().map_err(|_| format!("shape entry {d:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Header {
        dtype,
        big_endian,
        fortran,
        shape,
        data_start,
    })
}

/// Why a `.npy` array does not read: its format (said without a file name, which the caller adds), or
/// an error of the tensor's reading.
pub(crate) enum ArrayError {
    Format(String),
    Convert(ConvertError),
}

/// The array of one `.npy` file's bytes, its sizes checked against `limits` before anything is read.
pub(crate) fn array<'a>(
    data: Bytes<'a>,
    limits: &Limits,
    budget: &mut CopyBudget,
    name: &str,
) -> Result<Tensor<'a>, ArrayError> {
    let fail = ArrayError::Format;
    let h = parse_header(data.as_slice()).map_err(fail)?;
    if h.shape.len() > limits.max_rank {
        return Err(fail(format!(
            "{} dimensions (Limits::max_rank)",
            h.shape.len()
        )));
    }
    let n = numel(&h.shape)
        .filter(|&n| n as u64 <= limits.max_elements)
        .ok_or_else(|| fail(format!("shape {:?} is over the element budget", h.shape)))?;
    let need = n
        .checked_mul(h.dtype.bits() / 8)
        .ok_or_else(|| fail(format!("shape {:?} is too large", h.shape)))?;
    let have = data.as_slice().len() - h.data_start;
    if have < need {
        return Err(fail(format!(
            "shape {:?} of {} needs {need} bytes, the file holds {have}",
            h.shape, h.dtype
        )));
    }
    let storage = Storage {
        bytes: data.sub(h.data_start..h.data_start + need),
        dtype: h.dtype,
        big_endian: h.big_endian,
    };
    let view = if h.fortran {
        // Column-major: the first dim is the fastest.
        let mut v = View::contiguous(0, h.shape.iter().rev().copied().collect());
        v.shape.reverse();
        v.strides.reverse();
        v
    } else {
        View::contiguous(0, h.shape.clone())
    };
    storage
        .tensor(&view, budget, name)
        .map_err(ArrayError::Convert)
}

/// Reads an `.npz` file.
pub fn read<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Checkpoint<'a>, ConvertError> {
    let mut archive = Archive::open(bytes)?;
    let mut budget = CopyBudget::new(limits, bytes.len());
    let mut ckpt = Checkpoint::new();
    let mut skipped = Vec::new();
    for entry in archive.names() {
        let Some(name) = entry.strip_suffix(".npy") else {
            if !entry.ends_with('/') {
                skipped.push(entry);
            }
            continue;
        };
        let fail = |why: String| ConvertError::checkpoint(format!("npz entry \"{entry}\": {why}"));
        // Compressed entries are bounded by the element budget (8-byte elements, plus the header).
        let max = limits
            .max_elements
            .saturating_mul(16)
            .saturating_add(1 << 20);
        // `entry` is one of the archive's own names, so it is found.
        let data = archive
            .entry(&entry, max)?
            .ok_or_else(|| fail("listed but not found in the archive".to_string()))?;
        let t = array(data, limits, &mut budget, name).map_err(|e| match e {
            ArrayError::Format(why) => fail(why),
            ArrayError::Convert(e) => e,
        })?;
        ckpt.insert(name, t)?;
    }
    if !skipped.is_empty() {
        ckpt.notice(format!(
            "entries that are not .npy arrays were skipped: {}",
            skipped.join(", ")
        ));
    }
    Ok(ckpt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend((dict.len() as u16).to_le_bytes());
        v.extend(dict.as_bytes());
        v.extend(data);
        v
    }

    #[test]
    fn headers_parse_numpy_dict_literals() {
        let b = npy(
            "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }\n",
            &[],
        );
        let h = parse_header(&b).unwrap();
        assert_eq!(
            (h.dtype, h.big_endian, h.fortran, h.shape.clone()),
            (ElementType::F32, true, true, vec![2, 3])
        );
        let scalar = npy(
            "{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
            &[],
        );
        assert_eq!(parse_header(&scalar).unwrap().shape, Vec::<usize>::new());
        let one = npy(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }",
            &[],
        );
        assert_eq!(parse_header(&one).unwrap().shape, vec![5]);
        let rec = npy(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (5,), }",
            &[],
        );
        assert!(parse_header(&rec).is_err());
        let short = b"\x93NUMPY\x01\x00\xff\xff{";
        assert!(parse_header(short).unwrap_err().contains("past the end"));
    }
}
