//! Cumulative sum along one axis (ONNX `CumSum`, opset 14), on f32, f64 and the integer types
//! (integers wrap on overflow, as numpy's do): `exclusive` leaves each element out of its own sum,
//! `reverse` sums from the end of the axis.

pub use crate::schema::math::cumsum::CumSumParams;

use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::entry::{dims_of_first, op_entry, shape_reason};
use crate::ops::shape::{check_dims, ensure, same_dims};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// Checks `axis < rank`, a numeric dtype (not bool or f16), and that `y` has the shape of `x`.
pub fn validate(p: &CumSumParams, x: &[usize], dtype: DType, y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(usize::from(p.axis) < x.len(), "cumsum axis is not below the rank")?;
    ensure(
        !matches!(dtype, DType::Bool | DType::F16),
        "cumsum of bool or float16 is not supported",
    )?;
    ensure(same_dims(x, y), "cumsum output shape differs from input")
}

/// The addition of each element type (wrapping for integers).
trait Sum: Copy + Default {
    fn plus(self, o: Self) -> Self;
}

macro_rules! wrapping_sum {
    ($($t:ty),*) => {$(
        impl Sum for $t {
            fn plus(self, o: Self) -> Self { self.wrapping_add(o) }
        }
    )*};
}
wrapping_sum!(i8, u8, i16, u16, i32, u32, i64, u64);

impl Sum for f32 {
    fn plus(self, o: Self) -> Self {
        self + o
    }
}

impl Sum for f64 {
    fn plus(self, o: Self) -> Self {
        self + o
    }
}

impl Sum for half::f16 {
    fn plus(self, o: Self) -> Self {
        self + o
    }
}

fn cumsum_typed<T: Sum>(p: &CumSumParams, x: In<'_, T>, y: Out<'_, T>) {
    let axis = usize::from(p.axis);
    let len = x.dims[axis];
    let inner: usize = x.dims[axis + 1..].iter().product();
    let block = len * inner;
    if block == 0 || y.data.len() != x.data.len() {
        return;
    }
    for (xb, yb) in x.data.chunks_exact(block).zip(y.data.chunks_exact_mut(block)) {
        for lane in 0..inner {
            let mut sum = T::default();
            for step in 0..len {
                let at = if p.reverse { len - 1 - step } else { step } * inner + lane;
                if p.exclusive {
                    yb[at] = sum;
                    sum = sum.plus(xb[at]);
                } else {
                    sum = sum.plus(xb[at]);
                    yb[at] = sum;
                }
            }
        }
    }
}

/// `y` = the running sums of `x` along the axis.
pub fn cumsum(p: &CumSumParams, x: AnyIn<'_>, y: AnyOut<'_>) {
    crate::with_element!(y.dtype, T => {
        if let (Some(x), Some(y)) = (x.typed::<T>(), y.typed::<T>()) {
            cumsum_typed::<T>(p, x, y);
        }
    })
}

/// Signature of a cumulative-sum kernel.
pub type CumSumFn = fn(&CumSumParams, AnyIn<'_>, AnyOut<'_>);

op_entry! {
    /// The [`Kernels::cumsum`](crate::Kernels::cumsum) entry, which runs
    /// [`OpKind::CumSum`](crate::OpKind::CumSum).
    CumSum: CumSumFn = cumsum, CumSumParams, Same;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.dtype(0), o.out_dims()));
    infer |_p, x| dims_of_first(x);
    run |kernel, p, a| kernel(p, a.any(0), a.y);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(p: CumSumParams, x: &[f64], dims: &[usize]) -> [f64; 6] {
        let mut y = [f64::NAN; 6];
        let x_any = AnyIn {
            dtype: DType::F64,
            bytes: bytemuck::cast_slice(x),
            dims,
        };
        let y_any = AnyOut {
            dtype: DType::F64,
            bytes: bytemuck::cast_slice_mut(&mut y),
            dims,
        };
        cumsum(&p, x_any, y_any);
        y
    }

    #[test]
    fn running_sums_in_every_direction() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let p = |axis, exclusive, reverse| CumSumParams {
            axis,
            exclusive,
            reverse,
        };
        assert_eq!(run(p(1, false, false), &x, &[2, 3]), [1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
        assert_eq!(run(p(0, false, false), &x, &[2, 3]), [1.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
        assert_eq!(run(p(1, true, false), &x, &[2, 3]), [0.0, 1.0, 3.0, 0.0, 4.0, 9.0]);
        assert_eq!(run(p(1, false, true), &x, &[2, 3]), [6.0, 5.0, 3.0, 15.0, 11.0, 6.0]);
        assert_eq!(run(p(1, true, true), &x, &[2, 3]), [5.0, 3.0, 0.0, 11.0, 6.0, 0.0]);
    }

    #[test]
    fn integers_wrap() {
        let x = [i32::MAX, 1];
        let mut y = [0i32; 2];
        let dims = [2];
        let p = CumSumParams {
            axis: 0,
            exclusive: false,
            reverse: false,
        };
        cumsum(
            &p,
            AnyIn {
                dtype: DType::I32,
                bytes: bytemuck::cast_slice(&x),
                dims: &dims,
            },
            AnyOut {
                dtype: DType::I32,
                bytes: bytemuck::cast_slice_mut(&mut y),
                dims: &dims,
            },
        );
        assert_eq!(y, [i32::MAX, i32::MIN]);
        assert!(validate(&p, &[2], DType::Bool, &[2]).is_err());
    }
}
