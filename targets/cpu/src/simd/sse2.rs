//! The x86-64 baseline level: 4-wide SSE2 vectors. SSE2 has no FMA, so `mul_add` is a multiply and an
//! add (two roundings).

use core::arch::x86_64::*;

use super::Simd;

/// Four f32 lanes in an SSE register.
pub(crate) struct Sse2;

impl Simd for Sse2 {
    const LANES: usize = 4;
    type V = __m128;

    #[inline(always)]
    unsafe fn zero() -> __m128 {
        // SAFETY: SSE2, baseline on x86-64.
        unsafe { _mm_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m128 {
        // SAFETY: SSE2, baseline on x86-64.
        unsafe { _mm_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m128 {
        // SAFETY: the caller guarantees 4 readable f32 at `p`; `loadu` takes any alignment.
        unsafe { _mm_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn broadcast(p: *const f32) -> __m128 {
        // SAFETY: the caller guarantees one readable f32 at `p`.
        unsafe { _mm_load1_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m128) {
        // SAFETY: the caller guarantees 4 writable f32 at `p`; `storeu` takes any alignment.
        unsafe { _mm_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn mul_add(a: __m128, b: __m128, c: __m128) -> __m128 {
        // SAFETY: SSE2, baseline on x86-64.
        unsafe { _mm_add_ps(_mm_mul_ps(a, b), c) }
    }
    #[inline(always)]
    unsafe fn add(a: __m128, b: __m128) -> __m128 {
        // SAFETY: SSE2, baseline on x86-64.
        unsafe { _mm_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn clamp(x: __m128, lo: __m128, hi: __m128) -> __m128 {
        // SAFETY: SSE2, baseline on x86-64.
        unsafe {
            // `maxps a, b` is `a > b ? a : b` and `minps a, b` is `a < b ? a : b`: with the bound first, a
            // NaN `x` is returned as is, exactly as `Activation::apply`.
            _mm_min_ps(hi, _mm_max_ps(lo, x))
        }
    }
    #[inline(always)]
    unsafe fn sum(v: __m128) -> f32 {
        // SAFETY: SSE2, baseline on x86-64.
        unsafe {
            let hi = _mm_movehl_ps(v, v); // [2, 3, 2, 3]
            let pair = _mm_add_ps(v, hi); // [0+2, 1+3, ..]
            let odd = _mm_shuffle_ps::<0b01>(pair, pair);
            _mm_cvtss_f32(_mm_add_ss(pair, odd))
        }
    }
}
