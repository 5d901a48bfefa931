//! Element-wise arithmetic on dtypes other than f32: the integer types and f64. Same ops and
//! parameters as the f32 `binary` and `unary` kernels (a subset of them), dispatched on the dtype.
//!
//! Integer arithmetic wraps on overflow (two's complement, as numpy does); division and remainder by
//! zero give 0 instead of trapping. Integer `Div` truncates toward zero (C and ONNX), `Mod` (fmod) takes
//! the dividend's sign and `FloorMod` the divisor's (Python's `%`, ONNX `Mod` with `fmod=0`).

use crate::ops::element::{AnyIn, AnyOut, Element, TypedDims};
use crate::ops::entry::{op_entry, shape_reason};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims, ensure};
use crate::ops::{In, Out};
use crate::schema::{Activation, BinaryOp, BinaryParams, DType, UnaryOp, UnaryParams};
use crate::Error;

/// Arithmetic every non-f32 element type provides.
trait Arith: Element + Copy {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn fmod(self, o: Self) -> Self;
    fn floor_mod(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn sign(self) -> Self;
    fn zero() -> Self {
        Self::default()
    }
}

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn div(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            fn fmod(self, o: Self) -> Self { self.checked_rem(o).unwrap_or(0) }
            fn floor_mod(self, o: Self) -> Self {
                let r = self.checked_rem(o).unwrap_or(0);
                // A non-zero remainder whose sign differs from the divisor's moves by one divisor.
                #[allow(unused_comparisons)]
                let differs = r != 0 && ((r < 0) != (o < 0));
                if differs { r.wrapping_add(o) } else { r }
            }
            fn pow(self, o: Self) -> Self {
                let minus_one = (0 as $t).wrapping_sub(1);
                #[allow(unused_comparisons)]
                let signed = minus_one < 0;
                #[allow(unused_comparisons)]
                if o < 0 {
                    // Only 1 and -1 have integer reciprocal powers; numpy raises, ONNX leaves it open.
                    let odd = o % 2 != 0;
                    return if self == 1 {
                        1
                    } else if signed && self == minus_one {
                        if odd { minus_one } else { 1 }
                    } else {
                        0
                    };
                }
                // Square and multiply over all 64 exponent bits, wrapping like numpy.
                let mut e = o.to_i64() as u64;
                if o.to_i64() == i64::MAX {
                    // u64 exponents above i64::MAX saturate in to_i64; read the bits instead.
                    e = bytemuck::try_cast::<$t, u64>(o).unwrap_or(e);
                }
                let (mut base, mut acc) = (self, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            fn neg(self) -> Self { (0 as $t).wrapping_sub(self) }
            fn abs(self) -> Self {
                #[allow(unused_comparisons)]
                if self < 0 { self.neg() } else { self }
            }
            fn sign(self) -> Self {
                #[allow(unused_comparisons)]
                if self < 0 { (0 as $t).wrapping_sub(1) } else if self > 0 { 1 } else { 0 }
            }
        }
    )*};
}

int_arith!(i8, u8, i16, u16, i32, u32, i64, u64);

impl Arith for f64 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn sub(self, o: Self) -> Self {
        self - o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn div(self, o: Self) -> Self {
        self / o
    }
    fn fmod(self, o: Self) -> Self {
        libm::fmod(self, o)
    }
    fn floor_mod(self, o: Self) -> Self {
        let r = libm::fmod(self, o);
        if r == 0.0 {
            // Python's %: a zero remainder takes the divisor's sign.
            libm::copysign(0.0, o)
        } else if (r < 0.0) != (o < 0.0) {
            r + o
        } else {
            r
        }
    }
    fn pow(self, o: Self) -> Self {
        libm::pow(self, o)
    }
    fn neg(self) -> Self {
        -self
    }
    fn abs(self) -> Self {
        libm::fabs(self)
    }
    fn sign(self) -> Self {
        if self > 0.0 {
            1.0
        } else if self < 0.0 {
            -1.0
        } else {
            self
        }
    }
}

/// True for a NaN (the only value not equal to itself); always false for integers.
fn is_nan<T: PartialOrd>(v: T) -> bool {
    v.partial_cmp(&v).is_none()
}

fn supported(d: DType) -> bool {
    !matches!(d, DType::F32 | DType::F16 | DType::Bool)
}

/// The binary ops this file runs for non-f32 dtypes.
fn binary_supported(op: BinaryOp) -> bool {
    !matches!(op, BinaryOp::PRelu)
}

/// Checks a non-f32 binary op: dtypes equal and integer or f64, no fused activation, an op this file
/// runs, and broadcast shapes.
pub fn validate_binary(
    p: &BinaryParams,
    a: TypedDims<'_>,
    b: TypedDims<'_>,
    y: TypedDims<'_>,
) -> Result<(), Error> {
    for dims in [a.0, b.0, y.0] {
        check_dims(dims)?;
    }
    ensure(
        a.1 == b.1 && b.1 == y.1,
        "binary op inputs and output differ in dtype",
    )?;
    ensure(supported(a.1), "binary op on this dtype is not supported")?;
    ensure(
        p.act == Activation::None,
        "fused activation on a non-f32 op",
    )?;
    ensure(binary_supported(p.op), "this binary op runs on f32 only")?;
    check_broadcast(a.0, b.0, y.0)
}

/// `y = a op b` with broadcasting, for integer and f64 tensors.
pub fn binary(p: &BinaryParams, a: AnyIn<'_>, b: AnyIn<'_>, y: AnyOut<'_>) {
    crate::with_element!(y.dtype, T => {
        if let (Some(a), Some(b), Some(y)) = (a.typed::<T>(), b.typed::<T>(), y.typed::<T>()) {
            binary_typed::<T>(p.op, a, b, y);
        }
    })
}

fn binary_typed<T: ArithOrSkip>(op: BinaryOp, a: In<'_, T>, b: In<'_, T>, y: Out<'_, T>) {
    T::binary(op, a, b, y)
}

/// Dispatch helper: f32 and bool (`u8` is an integer here) never reach these kernels (validate
/// rejects them), but `with_element!` instantiates every storage type.
trait ArithOrSkip: Copy {
    fn binary(op: BinaryOp, a: In<'_, Self>, b: In<'_, Self>, y: Out<'_, Self>);
    fn unary(p: &UnaryParams, x: In<'_, Self>, y: Out<'_, Self>);
}

impl<T: Arith> ArithOrSkip for T {
    fn binary(op: BinaryOp, a: In<'_, T>, b: In<'_, T>, y: Out<'_, T>) {
        match op {
            BinaryOp::Add => broadcast_zip(a, b, y, T::add),
            BinaryOp::Sub => broadcast_zip(a, b, y, T::sub),
            BinaryOp::Mul => broadcast_zip(a, b, y, T::mul),
            BinaryOp::Div => broadcast_zip(a, b, y, T::div),
            BinaryOp::Pow => broadcast_zip(a, b, y, T::pow),
            BinaryOp::Mod => broadcast_zip(a, b, y, T::fmod),
            BinaryOp::FloorMod => broadcast_zip(a, b, y, T::floor_mod),
            // NaN (never equal to itself) propagates from either side, as numpy's minimum does.
            BinaryOp::Min => broadcast_zip(a, b, y, |u, v| if v < u || is_nan(v) { v } else { u }),
            BinaryOp::Max => broadcast_zip(a, b, y, |u, v| if v > u || is_nan(v) { v } else { u }),
            BinaryOp::PRelu => {}
        }
    }

    fn unary(p: &UnaryParams, x: In<'_, T>, y: Out<'_, T>) {
        let f = |v: T| -> T {
            match p.op {
                UnaryOp::Abs => v.abs(),
                UnaryOp::Neg => v.neg(),
                UnaryOp::Sign => v.sign(),
                UnaryOp::Relu => {
                    if v > T::zero() || is_nan(v) {
                        v
                    } else {
                        T::zero()
                    }
                }
                UnaryOp::Clip { min, max } => {
                    // Lower bound first, then upper, so min > max gives max (as ONNX and f32 do).
                    let (lo, hi) = (T::from_f64(f64::from(min)), T::from_f64(f64::from(max)));
                    let v = if v < lo { lo } else { v };
                    if v > hi {
                        hi
                    } else {
                        v
                    }
                }
                // Rounding an integer is the identity (f64 never takes this path: see unary_supported).
                _ => v,
            }
        };
        for (out, &v) in y.data.iter_mut().zip(x.data) {
            *out = f(v);
        }
    }
}

/// f32 and f16 never reach these kernels (f32 has its own, f16 is storage only).
macro_rules! skip_arith {
    ($($t:ty),*) => {$(
        impl ArithOrSkip for $t {
            fn binary(_: BinaryOp, _: In<'_, $t>, _: In<'_, $t>, _: Out<'_, $t>) {}
            fn unary(_: &UnaryParams, _: In<'_, $t>, _: Out<'_, $t>) {}
        }
    )*};
}

skip_arith!(f32, half::f16);

/// The unary ops this file runs for a non-f32 dtype.
fn unary_supported(op: UnaryOp, d: DType) -> bool {
    let int = d != DType::F64;
    match op {
        UnaryOp::Abs | UnaryOp::Neg | UnaryOp::Sign | UnaryOp::Relu | UnaryOp::Clip { .. } => true,
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => int,
        _ => false,
    }
}

/// Checks a non-f32 unary op: one dtype, integer or f64, an op this file runs, equal dims.
pub fn validate_unary(p: &UnaryParams, x: TypedDims<'_>, y: TypedDims<'_>) -> Result<(), Error> {
    check_dims(x.0)?;
    ensure(x.0 == y.0, "unary output dims differ from input")?;
    ensure(x.1 == y.1, "unary input and output differ in dtype")?;
    ensure(supported(x.1), "unary op on this dtype is not supported")?;
    ensure(unary_supported(p.op, x.1), "this unary op runs on f32 only")
}

/// `y = op(x)` for integer and f64 tensors.
pub fn unary(p: &UnaryParams, x: AnyIn<'_>, y: AnyOut<'_>) {
    crate::with_element!(y.dtype, T => {
        if let (Some(x), Some(y)) = (x.typed::<T>(), y.typed::<T>()) {
            T::unary(p, x, y);
        }
    })
}

/// Signature of a binary op on integer or f64 tensors.
pub type AnyBinaryFn = fn(&BinaryParams, AnyIn<'_>, AnyIn<'_>, AnyOut<'_>);

op_entry! {
    /// The [`Kernels::binary_any`](crate::Kernels::binary_any) entry, which runs
    /// [`OpKind::Binary`](crate::OpKind::Binary).
    BinaryAny: AnyBinaryFn = binary, BinaryParams, Own;
    // (Checks the dtypes too.)
    validate |p, o| shape_reason(validate_binary(p, o.typed(0), o.typed(1), o.out_typed()));
    run |kernel, p, a| kernel(p, a.any(0), a.any(1), a.y);
}

/// Signature of a unary op on integer or f64 tensors.
pub type AnyUnaryFn = fn(&UnaryParams, AnyIn<'_>, AnyOut<'_>);

op_entry! {
    /// The [`Kernels::unary_any`](crate::Kernels::unary_any) entry, which runs
    /// [`OpKind::Unary`](crate::OpKind::Unary).
    UnaryAny: AnyUnaryFn = unary, UnaryParams, Own;
    // (Checks the dtypes too.)
    validate |p, o| shape_reason(validate_unary(p, o.typed(0), o.out_typed()));
    run |kernel, p, a| kernel(p, a.any(0), a.y);
}
