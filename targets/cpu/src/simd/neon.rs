//! [`Neon`]: 4 lanes on aarch64, where NEON is part of the architecture.
//!
//! NEON's `fmin`/`fmax` propagate NaN and `fminnm`/`fmaxnm` drop it; neither is x86's `a < b ? a : b`,
//! which the trait promises, so `min` and `max` compare and select.

use core::arch::aarch64::*;

use super::Simd;

/// NEON: part of aarch64, so its intrinsics are available to every function of this crate there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Neon(());

impl Neon {
    /// The level's token.
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        Neon(())
    }
}

/// Evaluates NEON intrinsics inside a [`Neon`] method.
macro_rules! neon {
    ($e:expr) => {
        // SAFETY: NEON is part of aarch64, so every CPU this code runs on has it; the intrinsics take
        // and give values only.
        unsafe { $e }
    };
}

impl Simd for Neon {
    type V = float32x4_t;
    type I = int32x4_t;
    type M = uint32x4_t;
    const LANES: usize = 4;

    #[inline(always)]
    fn splat(self, x: f32) -> float32x4_t {
        neon!(vdupq_n_f32(x))
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> float32x4_t {
        // SAFETY: the caller gives a pointer valid for reading 4 f32; `ld1` takes any alignment.
        unsafe { vld1q_f32(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: float32x4_t) {
        // SAFETY: the caller gives a pointer valid for writing 4 f32; `st1` takes any alignment.
        unsafe { vst1q_f32(p, v) }
    }

    #[inline(always)]
    fn add(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        neon!(vaddq_f32(a, b))
    }
    #[inline(always)]
    fn sub(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        neon!(vsubq_f32(a, b))
    }
    #[inline(always)]
    fn mul(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        neon!(vmulq_f32(a, b))
    }
    #[inline(always)]
    fn div(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        neon!(vdivq_f32(a, b))
    }
    #[inline(always)]
    fn mul_add(self, a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        neon!(vfmaq_f32(c, a, b))
    }
    #[inline(always)]
    fn min(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        neon!(vbslq_f32(vcltq_f32(a, b), a, b))
    }
    #[inline(always)]
    fn max(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        neon!(vbslq_f32(vcgtq_f32(a, b), a, b))
    }
    #[inline(always)]
    fn sqrt(self, a: float32x4_t) -> float32x4_t {
        neon!(vsqrtq_f32(a))
    }
    #[inline(always)]
    fn floor(self, a: float32x4_t) -> float32x4_t {
        neon!(vrndmq_f32(a))
    }
    #[inline(always)]
    fn ceil(self, a: float32x4_t) -> float32x4_t {
        neon!(vrndpq_f32(a))
    }
    #[inline(always)]
    fn round(self, a: float32x4_t) -> float32x4_t {
        neon!(vrndnq_f32(a))
    }
    #[inline(always)]
    fn abs(self, a: float32x4_t) -> float32x4_t {
        neon!(vabsq_f32(a))
    }
    #[inline(always)]
    fn neg(self, a: float32x4_t) -> float32x4_t {
        neon!(vnegq_f32(a))
    }
    #[inline(always)]
    fn copysign(self, a: float32x4_t, sign: float32x4_t) -> float32x4_t {
        neon!(vbslq_f32(vdupq_n_u32(0x8000_0000), sign, a))
    }

    #[inline(always)]
    fn lt(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        neon!(vcltq_f32(a, b))
    }
    #[inline(always)]
    fn le(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        neon!(vcleq_f32(a, b))
    }
    #[inline(always)]
    fn eq(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        neon!(vceqq_f32(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: float32x4_t) -> uint32x4_t {
        neon!(vmvnq_u32(vceqq_f32(a, a)))
    }
    #[inline(always)]
    fn or(self, a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        neon!(vorrq_u32(a, b))
    }
    #[inline(always)]
    fn select(self, m: uint32x4_t, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        neon!(vbslq_f32(m, a, b))
    }

    #[inline(always)]
    fn splat_i(self, x: i32) -> int32x4_t {
        neon!(vdupq_n_s32(x))
    }
    #[inline(always)]
    fn to_bits(self, a: float32x4_t) -> int32x4_t {
        neon!(vreinterpretq_s32_f32(a))
    }
    #[inline(always)]
    fn bits_to_f32(self, a: int32x4_t) -> float32x4_t {
        neon!(vreinterpretq_f32_s32(a))
    }
    #[inline(always)]
    fn to_int(self, a: float32x4_t) -> int32x4_t {
        neon!(vcvtnq_s32_f32(a))
    }
    #[inline(always)]
    fn to_float(self, a: int32x4_t) -> float32x4_t {
        neon!(vcvtq_f32_s32(a))
    }
    #[inline(always)]
    fn add_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        neon!(vaddq_s32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        neon!(vsubq_s32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: int32x4_t, b: int32x4_t) -> int32x4_t {
        neon!(vandq_s32(a, b))
    }
    #[inline(always)]
    fn shl_23(self, a: int32x4_t) -> int32x4_t {
        neon!(vshlq_n_s32::<23>(a))
    }
    #[inline(always)]
    fn shr_23(self, a: int32x4_t) -> int32x4_t {
        neon!(vshrq_n_s32::<23>(a))
    }
    #[inline(always)]
    fn shr_1(self, a: int32x4_t) -> int32x4_t {
        neon!(vshrq_n_s32::<1>(a))
    }

    #[inline(always)]
    fn sum(self, a: float32x4_t) -> f32 {
        neon!({
            // (a0 + a2) + (a1 + a3), as the x86 levels add.
            let pairs = vadd_f32(vget_low_f32(a), vget_high_f32(a));
            vget_lane_f32::<0>(pairs) + vget_lane_f32::<1>(pairs)
        })
    }
}
