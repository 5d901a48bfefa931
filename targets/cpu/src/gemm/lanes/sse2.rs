//! The x86-64 baseline level: 4-wide SSE2 vectors. SSE2 has no FMA, so `mul_add` is a multiply and an
//! add (two roundings).

use core::arch::x86_64::*;

use super::Lanes;

/// Four f32 lanes in an SSE register.
pub(crate) struct Sse2;

impl Lanes for Sse2 {
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
    #[inline(always)]
    unsafe fn transpose(src: *const f32, lds: usize, dst: *mut f32, ldd: usize) {
        // SAFETY: SSE2, baseline on x86-64; 4 rows of 4 readable (src) / writable (dst) values.
        unsafe {
            let r0 = _mm_loadu_ps(src);
            let r1 = _mm_loadu_ps(src.add(lds));
            let r2 = _mm_loadu_ps(src.add(2 * lds));
            let r3 = _mm_loadu_ps(src.add(3 * lds));
            let t0 = _mm_unpacklo_ps(r0, r1); // a0 b0 a1 b1
            let t1 = _mm_unpacklo_ps(r2, r3); // c0 d0 c1 d1
            let t2 = _mm_unpackhi_ps(r0, r1); // a2 b2 a3 b3
            let t3 = _mm_unpackhi_ps(r2, r3); // c2 d2 c3 d3
            _mm_storeu_ps(dst, _mm_movelh_ps(t0, t1));
            _mm_storeu_ps(dst.add(ldd), _mm_movehl_ps(t1, t0));
            _mm_storeu_ps(dst.add(2 * ldd), _mm_movelh_ps(t2, t3));
            _mm_storeu_ps(dst.add(3 * ldd), _mm_movehl_ps(t3, t2));
        }
    }
}
