//! `Cast`: converts every element to another dtype, as numpy's `astype` does: float to integer
//! truncates toward zero (saturating at the type's bounds, NaN to 0), integer to integer wraps, anything
//! to bool is `!= 0`, bool to anything is 0 or 1. Float16 converts through f64 (exact both ways).

pub use crate::schema::CastParams;

use crate::ops::element::{AnyIn, AnyOut, Element, TypedDims};
use crate::ops::entry::{op_entry, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::schema::DType;
use crate::Error;

/// Checks that `y` has `x`'s dims and the dtype `p.to`, and that neither is F16.
pub fn validate(p: &CastParams, x: TypedDims<'_>, y: TypedDims<'_>) -> Result<(), Error> {
    check_dims(x.0)?;
    ensure(x.0 == y.0, "cast output dims differ from input")?;
    ensure(y.1 == p.to, "cast output dtype differs from the op's")
}

/// A value on its way between two dtypes: integers keep all 64 bits, floats their value.
#[derive(Clone, Copy)]
enum Scalar {
    Int(i64),
    UInt(u64),
    Float(f64),
}

fn read<T: Element>(v: T, from: DType) -> Scalar {
    match from {
        DType::F16 | DType::F32 | DType::F64 => Scalar::Float(v.to_f64()),
        DType::U64 => Scalar::UInt(bytemuck::try_cast::<T, u64>(v).unwrap_or(0)),
        _ => Scalar::Int(v.to_i64()),
    }
}

fn write<T: Element>(s: Scalar, to: DType) -> T {
    match (s, to) {
        (Scalar::Float(f), DType::Bool) => T::from_i64(i64::from(f != 0.0)),
        (Scalar::Int(i), DType::Bool) => T::from_i64(i64::from(i != 0)),
        (Scalar::UInt(u), DType::Bool) => T::from_i64(i64::from(u != 0)),
        (Scalar::Float(f), _) => T::from_f64(f),
        (Scalar::Int(i), _) => T::from_i64(i),
        // from_i64 wraps, which is what u64 -> narrower does bit for bit; to f32/f64 go through f64.
        // Straight to f32 (one rounding), not through f64.
        (Scalar::UInt(u), DType::F32) => T::from_f64(f64::from(u as f32)),
        (Scalar::UInt(u), _) if matches!(to, DType::F64 | DType::F16) => T::from_f64(u as f64),
        (Scalar::UInt(u), _) => T::from_i64(u as i64),
    }
}

/// `y[i] = x[i] as to`.
pub fn cast(_p: &CastParams, x: AnyIn<'_>, y: AnyOut<'_>) {
    let (from, to) = (x.dtype, y.dtype);
    crate::with_element!(from, S => {
        let Some(x) = x.typed::<S>() else { return };
        crate::with_element!(to, D => {
            let Some(y) = y.typed::<D>() else { return };
            for (out, &v) in y.data.iter_mut().zip(x.data) {
                *out = write::<D>(read::<S>(v, from), to);
            }
        })
    })
}

/// Signature of a cast.
pub type CastFn = fn(&CastParams, AnyIn<'_>, AnyOut<'_>);

op_entry! {
    /// The [`Kernels::cast`](crate::Kernels::cast) entry, which runs
    /// [`OpKind::Cast`](crate::OpKind::Cast).
    Cast: CastFn = cast, CastParams, Own;
    validate |p, o| shape_reason(validate(p, o.typed(0), o.out_typed()));
    run |kernel, p, a| kernel(p, a.any(0), a.y);
}
