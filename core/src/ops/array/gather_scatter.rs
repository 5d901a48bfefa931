//! What the data-dependent gathers and scatters share (`gather_scatter_elements`,
//! `gather_scatter_nd`, and TopK's and NonZero's index outputs): reading an index tensor (int32 or
//! int64) element by element, resolving an index against an axis (negative from the end), the error
//! for one outside it, and how a scatter combines an update with the element it lands on.

pub use crate::schema::array::gather_scatter::{GatherScatterMode, ScatterReduction};

use crate::ops::element::AnyIn;
use crate::schema::DType;
use crate::Error;

/// The error for an index outside its axis (a reason, as [`embedding`](super::embedding)'s, rather
/// than a variant carrying the index).
pub const OUT_OF_RANGE: Error = Error::Shape {
    reason: "an index of a gather or scatter is outside its axis",
};

/// The error for index or data tensors of a dtype the kernel does not take (validation refuses them
/// first).
pub const BAD_DTYPE: Error = Error::Unsupported {
    reason: "gather and scatter take int32 or int64 indices",
};

/// Index `k` of `ids` (int32 or int64), widened; `None` past its end or for another dtype.
#[inline]
pub fn index_at(ids: &AnyIn<'_>, k: usize) -> Option<i64> {
    match ids.dtype {
        DType::I32 => {
            let b = ids.bytes.get(4 * k..4 * k + 4)?;
            Some(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        }
        DType::I64 => {
            let b = ids.bytes.get(8 * k..8 * k + 8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Some(i64::from_le_bytes(a))
        }
        _ => None,
    }
}

/// Index `k` of `ids` resolved against an axis of `len` elements (`-len..0` counts from the end):
/// [`OUT_OF_RANGE`] outside `-len..len`, [`BAD_DTYPE`] if `ids` is not int32 or int64.
#[inline]
pub fn resolved_index(ids: &AnyIn<'_>, k: usize, len: usize) -> Result<usize, Error> {
    let i = index_at(ids, k).ok_or(BAD_DTYPE)?;
    super::embedding::row_of(i, len).ok_or(OUT_OF_RANGE)
}

/// Whether `dtype` is an index dtype (int32 or int64).
pub fn is_index(dtype: DType) -> bool {
    matches!(dtype, DType::I32 | DType::I64)
}

/// Whether a scatter with `reduction` runs on `dtype`: any dtype replaces, but only f32, int32 and
/// int64 combine.
pub fn reduces(reduction: ScatterReduction, dtype: DType) -> bool {
    reduction == ScatterReduction::None || matches!(dtype, DType::F32 | DType::I32 | DType::I64)
}

/// An element a scatter can combine with an update.
pub trait Combine: Copy {
    /// `self` combined with `update` by `r`.
    fn combine(self, update: Self, r: ScatterReduction) -> Self;
}

macro_rules! combine_int {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            #[inline]
            fn combine(self, u: Self, r: ScatterReduction) -> Self {
                match r {
                    ScatterReduction::None => u,
                    ScatterReduction::Add => self.wrapping_add(u),
                    ScatterReduction::Mul => self.wrapping_mul(u),
                    ScatterReduction::Max => self.max(u),
                    ScatterReduction::Min => self.min(u),
                }
            }
        }
    )*};
}
combine_int!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! combine_float {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            #[inline]
            fn combine(self, u: Self, r: ScatterReduction) -> Self {
                match r {
                    ScatterReduction::None => u,
                    ScatterReduction::Add => self + u,
                    ScatterReduction::Mul => self * u,
                    ScatterReduction::Max => if u > self { u } else { self },
                    ScatterReduction::Min => if u < self { u } else { self },
                }
            }
        }
    )*};
}
combine_float!(f32, f64, half::f16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_resolve_from_either_end_and_refuse_the_rest() {
        let ids: alloc::vec::Vec<u8> = [3i64, -1, 4, -5].iter().flat_map(|i| i.to_le_bytes()).collect();
        let any = AnyIn {
            dtype: DType::I64,
            bytes: &ids,
            dims: &[4],
        };
        assert_eq!(resolved_index(&any, 0, 4), Ok(3));
        assert_eq!(resolved_index(&any, 1, 4), Ok(3));
        assert_eq!(resolved_index(&any, 2, 4), Err(OUT_OF_RANGE));
        assert_eq!(resolved_index(&any, 3, 4), Err(OUT_OF_RANGE));
        assert_eq!(resolved_index(&any, 4, 4), Err(BAD_DTYPE));
        assert_eq!(3i32.combine(4, ScatterReduction::Mul), 12);
        assert_eq!(3.0f32.combine(-4.0, ScatterReduction::Min), -4.0);
    }
}
