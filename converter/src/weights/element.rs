//! Element types of checkpoint tensors and their conversion to the values the converter works with
//! (f32, f64, i64).
//!
//! The set is the union of what safetensors and PyTorch store. Floats (IEEE halves, bfloat16 and the
//! 8-bit float formats) convert to f32/f64; integers and booleans convert to i64. The MX sub-byte
//! formats (F4, F6) only make sense with block scales stored elsewhere, and complex numbers have no
//! real counterpart: they are read (a checkpoint holding one still opens) but never converted.

use ember_core::half::{bf16, f16};

/// The element type of a checkpoint tensor (safetensors' and PyTorch's dtypes). Not to be confused
/// with [`crate::ir::DType`], the element types of Ember's graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// Boolean, one byte (0 or 1).
    Bool,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 16-bit integer.
    U16,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 64-bit integer.
    I64,
    /// IEEE half precision.
    F16,
    /// bfloat16 (the upper half of an f32).
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// 8-bit float, 4 exponent and 3 mantissa bits, no infinities (`float8_e4m3fn`).
    F8E4M3,
    /// `float8_e4m3fnuz`: like [`ElementType::F8E4M3`] with bias 8 and a single NaN (0x80).
    F8E4M3Fnuz,
    /// 8-bit float, 5 exponent and 2 mantissa bits (the upper byte of an f16).
    F8E5M2,
    /// `float8_e5m2fnuz`: bias 16, a single NaN (0x80), no infinities.
    F8E5M2Fnuz,
    /// 8-bit power of two (MX block scale `float8_e8m0fnu`).
    F8E8M0,
    /// MX 4-bit float (two per byte); read, never converted.
    F4,
    /// MX 6-bit float, 2 exponent bits; read, never converted.
    F6E2M3,
    /// MX 6-bit float, 3 exponent bits; read, never converted.
    F6E3M2,
    /// Complex of two f32; read, never converted.
    C64,
    /// Complex of two f64; read, never converted.
    C128,
}

impl ElementType {
    /// The name safetensors uses (`F32`, `BF16`, `F8_E4M3`, ...; `C128` for PyTorch's complex128).
    pub fn name(self) -> &'static str {
        use ElementType::*;
        match self {
            Bool => "BOOL",
            U8 => "U8",
            I8 => "I8",
            U16 => "U16",
            I16 => "I16",
            U32 => "U32",
            I32 => "I32",
            U64 => "U64",
            I64 => "I64",
            F16 => "F16",
            BF16 => "BF16",
            F32 => "F32",
            F64 => "F64",
            F8E4M3 => "F8_E4M3",
            F8E4M3Fnuz => "F8_E4M3FNUZ",
            F8E5M2 => "F8_E5M2",
            F8E5M2Fnuz => "F8_E5M2FNUZ",
            F8E8M0 => "F8_E8M0",
            F4 => "F4",
            F6E2M3 => "F6_E2M3",
            F6E3M2 => "F6_E3M2",
            C64 => "C64",
            C128 => "C128",
        }
    }

    /// Bits per element.
    pub fn bits(self) -> usize {
        use ElementType::*;
        match self {
            F4 => 4,
            F6E2M3 | F6E3M2 => 6,
            Bool | U8 | I8 | F8E4M3 | F8E4M3Fnuz | F8E5M2 | F8E5M2Fnuz | F8E8M0 => 8,
            U16 | I16 | F16 | BF16 => 16,
            U32 | I32 | F32 => 32,
            U64 | I64 | F64 | C64 => 64,
            C128 => 128,
        }
    }

    /// Bytes of `n` elements (sub-byte types are packed, the last byte padded), or `None` on
    /// overflow.
    pub fn bytes_for(self, n: u64) -> Option<u64> {
        n.checked_mul(self.bits() as u64).map(|b| b.div_ceil(8))
    }

    /// The unit whose bytes a big-endian file stores reversed: the element, or one component of a
    /// complex number. 1 for the byte-sized and sub-byte types.
    pub fn swap_unit(self) -> usize {
        match self {
            ElementType::C64 => 4,
            ElementType::C128 => 8,
            t => (t.bits() / 8).max(1),
        }
    }

    /// True for the real floating-point types, which convert to f32 and f64.
    pub fn is_float(self) -> bool {
        use ElementType::*;
        matches!(
            self,
            F16 | BF16 | F32 | F64 | F8E4M3 | F8E4M3Fnuz | F8E5M2 | F8E5M2Fnuz | F8E8M0
        )
    }

    /// True for the integer types (not [`ElementType::Bool`]), which convert to i64.
    pub fn is_integer(self) -> bool {
        use ElementType::*;
        matches!(self, U8 | I8 | U16 | I16 | U32 | I32 | U64 | I64)
    }

    /// The value of the element stored in `b` (little-endian, `bits() / 8` bytes) as an f64, for
    /// the real float types.
    pub(crate) fn float_at(self, b: &[u8]) -> Option<f64> {
        use ElementType::*;
        Some(match self {
            F16 => f64::from(f16::from_le_bytes([b[0], b[1]])),
            BF16 => f64::from(bf16::from_le_bytes([b[0], b[1]])),
            F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            F64 => f64::from_le_bytes(b[..8].try_into().ok()?),
            F8E4M3 => minifloat(b[0], 3, 7, Special::FiniteNanAllOnes),
            F8E4M3Fnuz => minifloat(b[0], 3, 8, Special::NanAtNegativeZero),
            F8E5M2 => f64::from(f16::from_bits(u16::from(b[0]) << 8)),
            F8E5M2Fnuz => minifloat(b[0], 2, 16, Special::NanAtNegativeZero),
            F8E8M0 if b[0] == 0xff => f64::NAN,
            F8E8M0 => 2f64.powi(i32::from(b[0]) - 127),
            _ => return None,
        })
    }

    /// The value of the element stored in `b` (little-endian) as an i64, for the integer types and
    /// booleans; `None` for a u64 above `i64::MAX`.
    pub(crate) fn int_at(self, b: &[u8]) -> Option<i64> {
        use ElementType::*;
        Some(match self {
            Bool => i64::from(b[0] != 0),
            U8 => i64::from(b[0]),
            I8 => i64::from(b[0] as i8),
            U16 => i64::from(u16::from_le_bytes([b[0], b[1]])),
            I16 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            U32 => i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            I32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            U64 => i64::try_from(u64::from_le_bytes(b[..8].try_into().ok()?)).ok()?,
            I64 => i64::from_le_bytes(b[..8].try_into().ok()?),
            _ => return None,
        })
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How an 8-bit float format spends its special encodings.
#[derive(Clone, Copy)]
enum Special {
    /// No infinities; the all-ones exponent and mantissa is NaN (`e4m3fn`).
    FiniteNanAllOnes,
    /// No infinities, no negative zero; 0x80 is the only NaN (the `fnuz` formats).
    NanAtNegativeZero,
}

/// Decodes an 8-bit float with `man` mantissa bits, `7 - man` exponent bits and exponent `bias`.
fn minifloat(b: u8, man: u32, bias: i32, special: Special) -> f64 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp_mask = (1u8 << (7 - man)) - 1;
    let exp = i32::from((b >> man) & exp_mask);
    let frac = f64::from(b & ((1u8 << man) - 1)) / f64::from(1u32 << man);
    match special {
        Special::NanAtNegativeZero if b == 0x80 => return f64::NAN,
        Special::FiniteNanAllOnes if b & 0x7f == 0x7f => return f64::NAN,
        _ => {}
    }
    if exp == 0 {
        sign * frac * 2f64.powi(1 - bias)
    } else {
        sign * (1.0 + frac) * 2f64.powi(exp - bias)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_bit_floats_decode_to_their_known_values() {
        use ElementType::*;
        // float8_e4m3fn: 0x38 = 1.0, 0x7e = 448 (largest), 0x01 = 2^-9 (smallest subnormal).
        assert_eq!(F8E4M3.float_at(&[0x38]), Some(1.0));
        assert_eq!(F8E4M3.float_at(&[0x7e]), Some(448.0));
        assert_eq!(F8E4M3.float_at(&[0xb8]), Some(-1.0));
        assert_eq!(F8E4M3.float_at(&[0x01]), Some(2f64.powi(-9)));
        assert!(F8E4M3.float_at(&[0x7f]).unwrap().is_nan());
        // float8_e4m3fnuz: bias 8, so 0x40 = 1.0; 0x80 is NaN.
        assert_eq!(F8E4M3Fnuz.float_at(&[0x40]), Some(1.0));
        assert!(F8E4M3Fnuz.float_at(&[0x80]).unwrap().is_nan());
        // float8_e5m2: upper byte of an f16; 0x3c = 1.0, 0x7b = 57344.
        assert_eq!(F8E5M2.float_at(&[0x3c]), Some(1.0));
        assert_eq!(F8E5M2.float_at(&[0x7b]), Some(57344.0));
        assert!(F8E5M2.float_at(&[0x7c]).unwrap().is_infinite());
        // float8_e5m2fnuz: bias 16, 0x40 = 1.0; exponent 31 is finite, so 0x7f = 57344.
        assert_eq!(F8E5M2Fnuz.float_at(&[0x40]), Some(1.0));
        assert_eq!(F8E5M2Fnuz.float_at(&[0x7f]), Some(57344.0));
        // float8_e8m0fnu: 127 = 1.0, 130 = 8.0.
        assert_eq!(F8E8M0.float_at(&[127]), Some(1.0));
        assert_eq!(F8E8M0.float_at(&[130]), Some(8.0));
    }

    #[test]
    fn integers_widen_and_u64_overflow_is_none() {
        use ElementType::*;
        assert_eq!(I8.int_at(&[0xff]), Some(-1));
        assert_eq!(U16.int_at(&[0xff, 0xff]), Some(65535));
        assert_eq!(U64.int_at(&[0xff; 8]), None);
        assert_eq!(Bool.int_at(&[2]), Some(1));
        assert_eq!(F32.int_at(&[0; 4]), None);
    }
}
