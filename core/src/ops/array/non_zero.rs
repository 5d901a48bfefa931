//! The indices of the non-zero elements (ONNX `NonZero`, opsets 9, 13), in row-major order, as a
//! `[rank, max]` int64 tensor: column `j` holds the coordinates of the `j`-th non-zero element. The
//! count depends on the data while Ember plans static shapes, so the output has room for `max`
//! elements (the converter's `--max-count`): columns past the count hold -1, and non-zero elements
//! past `max` are left out.

pub use crate::schema::array::non_zero::NonZeroParams;

use crate::ops::element::{AnyIn, Element};
use crate::ops::entry::{out, shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands, OutDims};
use crate::ops::shape::{check_dims, ensure, Checked};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// The output's dims, `[rank, max]`, for an input of rank 1 or more.
pub fn out_dims(p: &NonZeroParams, x: &[usize]) -> Result<OutDims, &'static str> {
    if x.is_empty() {
        return Err("nonzero of a scalar is not supported");
    }
    let max = usize::try_from(p.max).map_err(|_| "nonzero max does not fit this machine")?;
    OutDims::from_slice(&[x.len(), max]).map_err(|_| "the format's rank limit is below 2")
}

/// Checks `x` of rank 1 or more and `y` int64 `[rank, max]`.
pub fn validate(p: &NonZeroParams, x: &[usize], y: &[usize], y_dtype: DType) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(y)?;
    ensure(y_dtype == DType::I64, "nonzero output is not int64")?;
    let want = out_dims(p, x).map_err(|reason| Error::Shape { reason })?;
    ensure(want.as_slice() == y, "nonzero output is not [rank, max]")
}

fn non_zero_typed<T: Element>(x: In<'_, T>, y: Out<'_, i64>) {
    let rank = x.dims.len();
    let max = y.data.len() / rank.max(1);
    y.data.fill(-1);
    let zero = T::default();
    let mut coords = [0usize; crate::schema::MAX_RANK];
    let mut found = 0;
    for &v in x.data {
        if v != zero {
            if found == max {
                return;
            }
            for (d, &c) in coords[..rank].iter().enumerate() {
                y.data[d * max + found] = c as i64;
            }
            found += 1;
        }
        for (c, &n) in coords[..rank].iter_mut().zip(x.dims).rev() {
            *c += 1;
            if *c < n {
                break;
            }
            *c = 0;
        }
    }
}

/// `y[:, j]` = the coordinates of the `j`-th non-zero element of `x`, -1 past the count.
pub fn non_zero(x: AnyIn<'_>, y: Out<'_, i64>) {
    crate::with_element!(x.dtype, T => {
        if let Some(x) = x.typed::<T>() {
            non_zero_typed::<T>(x, y);
        }
    })
}

/// Signature of a nonzero kernel.
pub type NonZeroFn = fn(AnyIn<'_>, Out<'_, i64>);

/// The [`Kernels::non_zero`](crate::Kernels::non_zero) entry, which runs
/// [`OpKind::NonZero`](crate::OpKind::NonZero).
pub struct NonZero;

impl KernelEntry for NonZero {
    type Kernel = NonZeroFn;
    const REFERENCE: NonZeroFn = non_zero;
    const STUB: NonZeroFn = |_, _| {};
}

impl OpEntry for NonZero {
    type Params = NonZeroParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &NonZeroParams, o: &impl Operands) -> Checked {
        shape_reason(validate(p, o.dims(0), o.out_dims(), o.out_dtype()))
    }

    fn infer(p: &NonZeroParams, x: &[&[usize]]) -> Result<OutDims, &'static str> {
        out_dims(p, x.first().copied().unwrap_or(&[]))
    }

    fn infer_dtype(_p: &NonZeroParams, _x: &[DType]) -> Result<DType, &'static str> {
        Ok(DType::I64)
    }

    #[inline(always)]
    fn run(kernel: NonZeroFn, _p: &NonZeroParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        kernel(a.any(0), out(a.y)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<const N: usize>(x: &[i32], dims: &[usize], max: usize) -> [i64; N] {
        let mut y = [7i64; N];
        let ydims = [dims.len(), max];
        let x = AnyIn { dtype: DType::I32, bytes: bytemuck::cast_slice(x), dims };
        non_zero(x, Out { data: &mut y, dims: &ydims });
        y
    }

    #[test]
    fn coordinates_in_row_major_order_then_minus_one() {
        // [[1, 0], [0, 3]] with room for 3: (0, 0), (1, 1), then -1.
        assert_eq!(run::<6>(&[1, 0, 0, 3], &[2, 2], 3), [0, 1, -1, 0, 1, -1]);
        // Room for 1 of 2: the first only.
        assert_eq!(run::<2>(&[1, 0, 0, 3], &[2, 2], 1), [0, 0]);
        assert_eq!(run::<3>(&[0, 5, 5], &[3], 3), [1, 2, -1]);
    }

    #[test]
    fn shapes_are_checked() {
        let p = NonZeroParams { max: 4 };
        assert!(validate(&p, &[2, 3], &[2, 4], DType::I64).is_ok());
        assert!(validate(&p, &[2, 3], &[2, 4], DType::I32).is_err());
        assert!(validate(&p, &[2, 3], &[2, 6], DType::I64).is_err());
        assert!(validate(&p, &[], &[0, 4], DType::I64).is_err());
    }
}
