//! [`Scalar`]: one f32 lane in portable Rust, the level every CPU runs (and what the compiler may
//! still vectorize on its own).

use super::Simd;

/// One lane, no intrinsics.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scalar;

impl Simd for Scalar {
    type V = f32;
    type I = i32;
    type M = bool;
    const LANES: usize = 1;

    #[inline(always)]
    fn splat(self, x: f32) -> f32 {
        x
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> f32 {
        // SAFETY: the caller gives a pointer valid for reading one f32 (any alignment).
        unsafe { p.read_unaligned() }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: f32) {
        // SAFETY: the caller gives a pointer valid for writing one f32 (any alignment).
        unsafe { p.write_unaligned(v) }
    }

    #[inline(always)]
    fn add(self, a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn sub(self, a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    fn mul(self, a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn div(self, a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    fn mul_add(self, a: f32, b: f32, c: f32) -> f32 {
        // Not `f32::mul_add`: without FMA in the target that is a slow library call.
        a * b + c
    }
    #[inline(always)]
    fn min(self, a: f32, b: f32) -> f32 {
        if a < b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn max(self, a: f32, b: f32) -> f32 {
        if a > b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn sqrt(self, a: f32) -> f32 {
        libm::sqrtf(a)
    }
    #[inline(always)]
    fn floor(self, a: f32) -> f32 {
        libm::floorf(a)
    }
    #[inline(always)]
    fn ceil(self, a: f32) -> f32 {
        libm::ceilf(a)
    }
    #[inline(always)]
    fn round(self, a: f32) -> f32 {
        libm::rintf(a)
    }
    #[inline(always)]
    fn abs(self, a: f32) -> f32 {
        f32::from_bits(a.to_bits() & 0x7fff_ffff)
    }
    #[inline(always)]
    fn neg(self, a: f32) -> f32 {
        -a
    }
    #[inline(always)]
    fn copysign(self, a: f32, sign: f32) -> f32 {
        f32::from_bits((a.to_bits() & 0x7fff_ffff) | (sign.to_bits() & 0x8000_0000))
    }

    #[inline(always)]
    fn lt(self, a: f32, b: f32) -> bool {
        a < b
    }
    #[inline(always)]
    fn le(self, a: f32, b: f32) -> bool {
        a <= b
    }
    #[inline(always)]
    fn eq(self, a: f32, b: f32) -> bool {
        a == b
    }
    #[inline(always)]
    fn is_nan(self, a: f32) -> bool {
        a.is_nan()
    }
    #[inline(always)]
    fn or(self, a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn select(self, m: bool, a: f32, b: f32) -> f32 {
        if m {
            a
        } else {
            b
        }
    }

    #[inline(always)]
    fn splat_i(self, x: i32) -> i32 {
        x
    }
    #[inline(always)]
    fn to_bits(self, a: f32) -> i32 {
        a.to_bits() as i32
    }
    #[inline(always)]
    fn bits_to_f32(self, a: i32) -> f32 {
        f32::from_bits(a as u32)
    }
    #[inline(always)]
    fn to_int(self, a: f32) -> i32 {
        // The callers keep |a| < 2^31 (or pass NaN, whose lane they discard); `as` saturates.
        libm::rintf(a) as i32
    }
    #[inline(always)]
    fn to_float(self, a: i32) -> f32 {
        a as f32
    }
    #[inline(always)]
    fn add_i(self, a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn sub_i(self, a: i32, b: i32) -> i32 {
        a.wrapping_sub(b)
    }
    #[inline(always)]
    fn and_i(self, a: i32, b: i32) -> i32 {
        a & b
    }
    #[inline(always)]
    fn shl_23(self, a: i32) -> i32 {
        a.wrapping_shl(23)
    }
    #[inline(always)]
    fn shr_23(self, a: i32) -> i32 {
        a >> 23
    }
    #[inline(always)]
    fn shr_1(self, a: i32) -> i32 {
        a >> 1
    }

    #[inline(always)]
    fn sum(self, a: f32) -> f32 {
        a
    }
}
