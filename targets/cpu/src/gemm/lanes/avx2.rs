//! The x86-64 AVX2 + FMA level (Haswell, Zen and later): 8-wide vectors, fused multiply-add.

use core::arch::x86_64::*;

use super::Lanes;

/// Eight f32 lanes in an AVX register.
pub(crate) struct Avx2;

// SAFETY (every block below): the trait's contract has the caller run these only on a CPU with AVX2 and
// FMA (checked when the op starts), and hands valid pointers for the accesses.
impl Lanes for Avx2 {
    const LANES: usize = 8;
    type V = __m256;

    #[inline(always)]
    unsafe fn zero() -> __m256 {
        // SAFETY: see the impl (AVX).
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m256 {
        // SAFETY: see the impl (AVX).
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        // SAFETY: see the impl (AVX; 8 readable f32 at `p`, any alignment).
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn broadcast(p: *const f32) -> __m256 {
        // SAFETY: see the impl (AVX; one readable f32 at `p`).
        unsafe { _mm256_broadcast_ss(&*p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) {
        // SAFETY: see the impl (AVX; 8 writable f32 at `p`, any alignment).
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn mul_add(a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: see the impl (FMA).
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl (AVX).
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn clamp(x: __m256, lo: __m256, hi: __m256) -> __m256 {
        // `vmaxps a, b` is `a > b ? a : b`, `vminps a, b` is `a < b ? a : b`: bound first, so a NaN `x`
        // passes through, exactly as `Activation::apply`.
        // SAFETY: see the impl (AVX).
        unsafe { _mm256_min_ps(hi, _mm256_max_ps(lo, x)) }
    }
    #[inline(always)]
    unsafe fn sum(v: __m256) -> f32 {
        // SAFETY: see the impl (AVX; SSE is baseline).
        unsafe {
            let q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let hi = _mm_movehl_ps(q, q);
            let pair = _mm_add_ps(q, hi);
            let odd = _mm_shuffle_ps::<0b01>(pair, pair);
            _mm_cvtss_f32(_mm_add_ss(pair, odd))
        }
    }
    #[inline(always)]
    unsafe fn transpose(src: *const f32, lds: usize, dst: *mut f32, ldd: usize) {
        // SAFETY: see the impl (AVX; 8 rows of 8 readable (src) / writable (dst) values).
        unsafe {
            let r: [__m256; 8] = core::array::from_fn(|j| _mm256_loadu_ps(src.add(j * lds)));
            // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves.
            let t: [__m256; 8] = core::array::from_fn(|i| {
                let (a, b) = (r[(i / 2) * 2], r[(i / 2) * 2 + 1]);
                if i % 2 == 0 {
                    _mm256_unpacklo_ps(a, b)
                } else {
                    _mm256_unpackhi_ps(a, b)
                }
            });
            let u: [__m256; 8] = core::array::from_fn(|i| {
                let (a, b) = (t[(i / 4) * 4 + i % 2], t[(i / 4) * 4 + i % 2 + 2]);
                if (i / 2) % 2 == 0 {
                    _mm256_shuffle_ps::<0b01_00_01_00>(a, b)
                } else {
                    _mm256_shuffle_ps::<0b11_10_11_10>(a, b)
                }
            });
            // u[0..4] hold rows 0..4 of columns 0, 1, 2, 3 (low half) and 4, 5, 6, 7 (high half),
            // in the order col 0, 2, 1, 3 for u[0], u[1], u[2], u[3]; likewise u[4..8] for rows 4..8.
            for (i, &q) in [0usize, 2, 1, 3].iter().enumerate() {
                let (lo, hi) = (u[q], u[q + 4]);
                _mm256_storeu_ps(dst.add(i * ldd), _mm256_permute2f128_ps::<0x20>(lo, hi));
                _mm256_storeu_ps(
                    dst.add((i + 4) * ldd),
                    _mm256_permute2f128_ps::<0x31>(lo, hi),
                );
            }
        }
    }
}
