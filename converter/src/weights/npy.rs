//! One numpy `.npy` array (a model input, an expected output, a calibration set), read with the checks
//! of the `.npz` reader: the header is parsed without trusting it, the shape's element count is
//! checked for overflow and against [`Limits`] before anything is read, and the file must hold every
//! byte the header claims. Fortran-order arrays come back in row-major order, big-endian ones
//! little-endian.

use super::gather::CopyBudget;
use super::npz::{array, ArrayError};
use super::{Bytes, Limits, Tensor};

/// The array `bytes` hold (borrowed from them when it is a little-endian C-order array), or what is
/// wrong with them (a reason without a file name, for the caller to add).
pub fn read<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Tensor<'a>, String> {
    let mut budget = CopyBudget::new(limits, bytes.len());
    array(Bytes::Borrowed(bytes), limits, &mut budget, "the array").map_err(|e| match e {
        ArrayError::Format(why) => why,
        ArrayError::Convert(e) => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::ElementType;

    fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend((dict.len() as u16).to_le_bytes());
        v.extend(dict.as_bytes());
        v.extend(data);
        v
    }

    #[test]
    fn arrays_read_in_row_major_little_endian_order() {
        let le: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let c = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            &le,
        );
        let t = read(&c, &Limits::default()).unwrap();
        assert_eq!((t.dtype(), t.shape()), (ElementType::F32, &[2, 3][..]));
        assert!(t.is_borrowed());
        assert_eq!(t.to_f32().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // The same values stored column-major and big-endian: columns (1, 4), (2, 5), (3, 6).
        let be: Vec<u8> = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let f = npy(
            "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }",
            &be,
        );
        let t = read(&f, &Limits::default()).unwrap();
        assert_eq!(t.to_f32().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn sizes_are_checked_before_anything_is_read() {
        // 2^32 * (2^32 + 1) elements: the product overflows; numpy's header says so in 16 bytes.
        let huge = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967297), }",
            &[0; 16],
        );
        let e = read(&huge, &Limits::default()).unwrap_err();
        assert!(e.contains("element budget"), "{e}");
        let short = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }",
            &[0; 16],
        );
        let e = read(&short, &Limits::default()).unwrap_err();
        assert!(e.contains("needs 4000 bytes, the file holds 16"), "{e}");
        assert!(read(b"\x93NUMPY", &Limits::default()).is_err());
        assert!(read(b"PK\x03\x04", &Limits::default())
            .unwrap_err()
            .contains("magic"));
    }
}
