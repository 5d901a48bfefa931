//! Element types and dtype-erased tensor views.
//!
//! Most kernels are written for one element type (`In<'_, f32>`). Ops that run on every dtype
//! (comparison, casts, `Where`, integer arithmetic) take an [`AnyIn`] / [`AnyOut`]: the bytes, the
//! dtype and the dims. They turn it into a typed view with [`AnyIn::typed`] after matching on the dtype,
//! so one kernel serves all types without a type parameter in the kernel table.

use crate::ops::{In, Out};
use crate::schema::DType;

/// A Rust type that is the storage of one [`DType`]. Booleans are stored as `u8` 0/1 and have no
/// `Element` type of their own: kernels read them as `u8`.
pub trait Element: bytemuck::Pod + PartialOrd + Default {
    /// The dtype whose elements this type stores.
    const DTYPE: DType;
    /// The value as f64 (exact for every integer up to 2^53).
    fn to_f64(self) -> f64;
    /// The value converted from f64 as a numpy `astype` does for in-range values: floats round to
    /// nearest, integers truncate toward zero and saturate at the type's bounds (NaN becomes 0).
    fn from_f64(v: f64) -> Self;
    /// The value as i64 (floats truncate toward zero and saturate; u64 above i64::MAX saturates).
    fn to_i64(self) -> i64;
    /// The value converted from i64 with two's-complement wrapping, as numpy's `astype` does.
    fn from_i64(v: i64) -> Self;
}

/// `value` as one element of `dtype`, in its little-endian bytes (the first `dtype.size()` of the
/// eight): floats round to nearest, Bool is `value != 0`, integers truncate toward zero and wrap to
/// the type's width (in-range values are exact).
pub fn scalar_bytes(dtype: DType, value: f64) -> [u8; 8] {
    let bits: u64 = match dtype {
        DType::F64 => value.to_bits(),
        DType::F32 => u64::from((value as f32).to_bits()),
        DType::F16 => u64::from(half::f16::from_f64(value).to_bits()),
        DType::Bool => u64::from(value != 0.0),
        DType::U64 => value as u64,
        // Signed and narrower unsigned types: two's complement, truncated to the width.
        _ => value as i64 as u64,
    };
    bits.to_le_bytes()
}

/// One element of `dtype` read from its little-endian bytes (the first `dtype.size()` of `bytes`; 0
/// where they are short), as f64: exact for every float of the type and every integer below 2^53.
/// The inverse of [`scalar_bytes`] on the values a type holds.
pub fn scalar_value(dtype: DType, bytes: &[u8]) -> f64 {
    let mut b = [0u8; 8];
    let n = dtype.size().min(8).min(bytes.len());
    b[..n].copy_from_slice(&bytes[..n]);
    let [b0, b1, b2, b3, ..] = b;
    match dtype {
        DType::F32 => f64::from(f32::from_le_bytes([b0, b1, b2, b3])),
        DType::F64 => f64::from_le_bytes(b),
        DType::F16 => half::f16::from_le_bytes([b0, b1]).to_f64(),
        DType::I8 => f64::from(b0 as i8),
        DType::I16 => f64::from(i16::from_le_bytes([b0, b1])),
        DType::I32 => f64::from(i32::from_le_bytes([b0, b1, b2, b3])),
        DType::I64 => i64::from_le_bytes(b) as f64,
        // Unsigned types and bool: the bytes past the width are zero.
        _ => u64::from_le_bytes(b) as f64,
    }
}

/// An integer as i64: u64 values above i64::MAX saturate; every other integer type fits.
fn saturating_i64<T: TryInto<i64>>(v: T) -> i64 {
    v.try_into().unwrap_or(i64::MAX)
}

/// [`Element`] for Rust's primitive numbers, whose conversions are `as` casts but for `to_i64`
/// (`to_i64(v) = ...`, with `v` the value).
macro_rules! primitive_element {
    ($($t:ty => $d:ident),*; to_i64($v:ident) = $to_i64:expr) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                // `as` rounds to a float type; to an integer type it truncates toward zero, saturates,
                // and maps NaN to 0.
                v as $t
            }
            fn to_i64(self) -> i64 {
                let $v = self;
                $to_i64
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    )*};
}

primitive_element!(i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64;
    to_i64(v) = saturating_i64(v));
primitive_element!(f32 => F32, f64 => F64; to_i64(v) = v as i64);

impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
    fn to_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        half::f16::from_f64(v)
    }
    fn to_i64(self) -> i64 {
        half::f16::to_f64(self) as i64
    }
    fn from_i64(v: i64) -> Self {
        half::f16::from_f64(v as f64)
    }
}

/// A tensor's dims and dtype: what the validators of the ops that run on several dtypes check.
pub type TypedDims<'a> = (&'a [usize], DType);

/// A read-only tensor of any dtype.
#[derive(Clone, Copy, Debug)]
pub struct AnyIn<'a> {
    /// Element type.
    pub dtype: DType,
    /// The elements' bytes (`dtype.size()` bytes each, aligned for the dtype).
    pub bytes: &'a [u8],
    /// Dimensions, outermost first.
    pub dims: &'a [usize],
}

/// A writable tensor of any dtype.
#[derive(Debug)]
pub struct AnyOut<'a> {
    /// Element type.
    pub dtype: DType,
    /// The elements' bytes.
    pub bytes: &'a mut [u8],
    /// Dimensions, outermost first.
    pub dims: &'a [usize],
}

/// Whether `T` is a 1-byte, unaligned element type (int8, uint8, bool), whose views of any bytes
/// succeed.
const fn one_byte<T>() -> bool {
    core::mem::size_of::<T>() == 1 && core::mem::align_of::<T>() == 1
}

impl<'a> AnyIn<'a> {
    /// The elements as `T`, or `None` if the bytes are not a whole, aligned number of `T`s. Callers
    /// match on `dtype` first; the type is not checked against it here, so booleans can be read as `u8`.
    pub fn typed<T: bytemuck::Pod>(self) -> Option<In<'a, T>> {
        let data = match self.bytes {
            // Bytes are always a whole, aligned number of 1-byte elements (the compiler sees this
            // arm cannot fail: int8 kernels' dispatch carries no check).
            bytes if one_byte::<T>() => bytemuck::try_cast_slice(bytes).ok()?,
            // An empty tensor's bytes may sit anywhere (even at a dangling address): no elements to
            // align.
            [] => &[],
            bytes => bytemuck::try_cast_slice(bytes).ok()?,
        };
        Some(In {
            data,
            dims: self.dims,
        })
    }
}

impl<'a> AnyOut<'a> {
    /// The elements as `T`, writable; see [`AnyIn::typed`].
    pub fn typed<T: bytemuck::Pod>(self) -> Option<Out<'a, T>> {
        let data = match self.bytes {
            bytes if one_byte::<T>() => bytemuck::try_cast_slice_mut(bytes).ok()?,
            [] => &mut [],
            bytes => bytemuck::try_cast_slice_mut(bytes).ok()?,
        };
        Some(Out {
            data,
            dims: self.dims,
        })
    }
}

/// Calls `$body` with `$T` bound to the storage type of `$dtype` (booleans as `u8`, F16 as
/// `half::f16`). The `@arms` rule writes the match from the table of dtypes and types.
#[macro_export]
#[doc(hidden)]
macro_rules! with_element {
    (@arms $dtype:expr, $T:ident, $body:expr; $($($d:ident)|+ => $t:ty,)*) => {
        match $dtype {
            $($($crate::schema::DType::$d)|+ => {
                type $T = $t;
                $body
            })*
        }
    };
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::with_element!(@arms $dtype, $T, $body;
            F32 => f32,
            F64 => f64,
            I8 => i8,
            U8 | Bool => u8,
            I16 => i16,
            U16 => u16,
            I32 => i32,
            U32 => u32,
            I64 => i64,
            U64 => u64,
            F16 => $crate::half::f16,
        )
    };
}
