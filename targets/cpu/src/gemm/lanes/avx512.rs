//! The x86-64 AVX-512 level (`x86-64-v4`: Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4 and Zen 5):
//! 16-wide vectors and 32 registers, so register tiles twice as wide as AVX2's with more rows.

use core::arch::x86_64::*;

use super::avx2::Avx2;
use super::Lanes;

/// Sixteen f32 lanes in a ZMM register.
pub(crate) struct Avx512;

// SAFETY (every block below): the trait's contract has the caller run these only on a CPU with the
// AVX-512 level's features, AVX2 and FMA included (`Isa::Avx512::is_supported`, checked when the op
// starts), and hands valid pointers for the accesses.
impl Lanes for Avx512 {
    const LANES: usize = 16;
    type V = __m512;

    #[inline(always)]
    unsafe fn zero() -> __m512 {
        // SAFETY: see the impl (AVX-512F).
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m512 {
        // SAFETY: see the impl (AVX-512F).
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: see the impl (AVX-512F; 16 readable f32 at `p`, any alignment).
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn broadcast(p: *const f32) -> __m512 {
        // SAFETY: see the impl (AVX-512F; one readable f32 at `p`). A broadcast of a loaded scalar
        // compiles to `vbroadcastss zmm, [mem]`, or to an embedded broadcast of the FMA's operand.
        unsafe { _mm512_set1_ps(*p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: see the impl (AVX-512F; 16 writable f32 at `p`, any alignment).
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn mul_add(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: see the impl (AVX-512F).
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl (AVX-512F).
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn clamp(x: __m512, lo: __m512, hi: __m512) -> __m512 {
        // As AVX2's: `vmaxps a, b` is `a > b ? a : b` and `vminps a, b` is `a < b ? a : b` on ZMM too,
        // so bounding first lets a NaN `x` through, exactly as `Activation::apply`.
        // SAFETY: see the impl (AVX-512F).
        unsafe { _mm512_min_ps(hi, _mm512_max_ps(lo, x)) }
    }
    #[inline(always)]
    unsafe fn sum(v: __m512) -> f32 {
        // The two 256-bit halves added, then AVX2's sum: the same order as summing two AVX2 vectors.
        // SAFETY: see the impl (AVX-512F; AVX2 is part of the level).
        unsafe {
            let lo = _mm512_castps512_ps256(v);
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
            Avx2::sum(_mm256_add_ps(lo, hi))
        }
    }
    #[inline(always)]
    unsafe fn transpose(src: *const f32, lds: usize, dst: *mut f32, ldd: usize) {
        // Four 8 x 8 blocks: block (bi, bj) of `dst` is block (bj, bi) of `src`, transposed.
        // SAFETY: see the impl (AVX2 is part of the level); 16 rows of 16 readable (src) / writable
        // (dst) values, of which each call touches an 8 x 8 corner.
        unsafe {
            for bi in 0..2 {
                for bj in 0..2 {
                    Avx2::transpose(
                        src.add(bj * 8 * lds + bi * 8),
                        lds,
                        dst.add(bi * 8 * ldd + bj * 8),
                        ldd,
                    );
                }
            }
        }
    }
}
