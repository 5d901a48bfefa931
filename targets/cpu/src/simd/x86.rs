//! The x86-64 levels: [`Sse2`] (4 lanes, every x86-64 CPU) and [`Avx2`] (8 lanes, AVX2 and FMA).
//!
//! SSE2 has no rounding instruction (`roundps` is SSE4.1): its `floor`, `ceil` and `round` add and
//! subtract 2^23, which rounds to an integer in the default rounding mode, then fix up the direction.

use core::arch::x86_64::*;

use super::Simd;

/// SSE2: part of x86-64, so its intrinsics are available to every function of this crate there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sse2(());

impl Sse2 {
    /// The level's token.
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        Sse2(())
    }
}

/// Evaluates SSE or SSE2 intrinsics inside an [`Sse2`] method.
macro_rules! sse {
    ($e:expr) => {
        // SAFETY: SSE and SSE2 are part of x86-64, so every CPU this code runs on has them; the
        // intrinsics take and give values only.
        unsafe { $e }
    };
}

/// 2^23: from it on every f32 is an integer.
const TWO_23: f32 = 8_388_608.0;

impl Simd for Sse2 {
    type V = __m128;
    type I = __m128i;
    type M = __m128;
    const LANES: usize = 4;

    #[inline(always)]
    fn splat(self, x: f32) -> __m128 {
        sse!(_mm_set1_ps(x))
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m128 {
        // SAFETY: the caller gives a pointer valid for reading 4 f32; `loadu` takes any alignment.
        unsafe { _mm_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: __m128) {
        // SAFETY: the caller gives a pointer valid for writing 4 f32; `storeu` takes any alignment.
        unsafe { _mm_storeu_ps(p, v) }
    }

    #[inline(always)]
    fn add(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_add_ps(a, b))
    }
    #[inline(always)]
    fn sub(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_sub_ps(a, b))
    }
    #[inline(always)]
    fn mul(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_mul_ps(a, b))
    }
    #[inline(always)]
    fn div(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_div_ps(a, b))
    }
    #[inline(always)]
    fn mul_add(self, a: __m128, b: __m128, c: __m128) -> __m128 {
        sse!(_mm_add_ps(_mm_mul_ps(a, b), c))
    }
    #[inline(always)]
    fn min(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_min_ps(a, b))
    }
    #[inline(always)]
    fn max(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_max_ps(a, b))
    }
    #[inline(always)]
    fn sqrt(self, a: __m128) -> __m128 {
        sse!(_mm_sqrt_ps(a))
    }
    #[inline(always)]
    fn floor(self, a: __m128) -> __m128 {
        sse!({
            let r = self.round(a);
            // One less where rounding went up; the sign of `a` restores -0 (floor(-0) = -0).
            let up = _mm_and_ps(_mm_cmpgt_ps(r, a), _mm_set1_ps(1.0));
            self.copysign(_mm_sub_ps(r, up), a)
        })
    }
    #[inline(always)]
    fn ceil(self, a: __m128) -> __m128 {
        sse!({
            let r = self.round(a);
            // One more where rounding went down; the sign of `a` gives ceil(-0.5) = -0.
            let down = _mm_and_ps(_mm_cmplt_ps(r, a), _mm_set1_ps(1.0));
            self.copysign(_mm_add_ps(r, down), a)
        })
    }
    #[inline(always)]
    fn round(self, a: __m128) -> __m128 {
        sse!({
            let magnitude = self.abs(a);
            let big = _mm_set1_ps(TWO_23);
            // For |a| < 2^23, |a| + 2^23 has no fraction bits left: the addition rounds to nearest even.
            let rounded = self.copysign(_mm_sub_ps(_mm_add_ps(magnitude, big), big), a);
            // Larger magnitudes, infinities and NaN are their own rounding.
            self.select(_mm_cmplt_ps(magnitude, big), rounded, a)
        })
    }
    #[inline(always)]
    fn abs(self, a: __m128) -> __m128 {
        sse!(_mm_andnot_ps(_mm_set1_ps(-0.0), a))
    }
    #[inline(always)]
    fn neg(self, a: __m128) -> __m128 {
        sse!(_mm_xor_ps(a, _mm_set1_ps(-0.0)))
    }
    #[inline(always)]
    fn copysign(self, a: __m128, sign: __m128) -> __m128 {
        sse!({
            let bit = _mm_set1_ps(-0.0);
            _mm_or_ps(_mm_andnot_ps(bit, a), _mm_and_ps(bit, sign))
        })
    }

    #[inline(always)]
    fn lt(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_cmplt_ps(a, b))
    }
    #[inline(always)]
    fn le(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_cmple_ps(a, b))
    }
    #[inline(always)]
    fn eq(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_cmpeq_ps(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: __m128) -> __m128 {
        sse!(_mm_cmpunord_ps(a, a))
    }
    #[inline(always)]
    fn or(self, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_or_ps(a, b))
    }
    #[inline(always)]
    fn select(self, m: __m128, a: __m128, b: __m128) -> __m128 {
        sse!(_mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b)))
    }

    #[inline(always)]
    fn splat_i(self, x: i32) -> __m128i {
        sse!(_mm_set1_epi32(x))
    }
    #[inline(always)]
    fn to_bits(self, a: __m128) -> __m128i {
        sse!(_mm_castps_si128(a))
    }
    #[inline(always)]
    fn bits_to_f32(self, a: __m128i) -> __m128 {
        sse!(_mm_castsi128_ps(a))
    }
    #[inline(always)]
    fn to_int(self, a: __m128) -> __m128i {
        // Rounds in the MXCSR mode, which Rust leaves at round to nearest even.
        sse!(_mm_cvtps_epi32(a))
    }
    #[inline(always)]
    fn to_float(self, a: __m128i) -> __m128 {
        sse!(_mm_cvtepi32_ps(a))
    }
    #[inline(always)]
    fn add_i(self, a: __m128i, b: __m128i) -> __m128i {
        sse!(_mm_add_epi32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: __m128i, b: __m128i) -> __m128i {
        sse!(_mm_sub_epi32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: __m128i, b: __m128i) -> __m128i {
        sse!(_mm_and_si128(a, b))
    }
    #[inline(always)]
    fn shl_23(self, a: __m128i) -> __m128i {
        sse!(_mm_slli_epi32::<23>(a))
    }
    #[inline(always)]
    fn shr_23(self, a: __m128i) -> __m128i {
        sse!(_mm_srai_epi32::<23>(a))
    }
    #[inline(always)]
    fn shr_1(self, a: __m128i) -> __m128i {
        sse!(_mm_srai_epi32::<1>(a))
    }

    #[inline(always)]
    fn sum(self, a: __m128) -> f32 {
        sse!({
            // (a0 + a2) + (a1 + a3).
            let pairs = _mm_add_ps(a, _mm_movehl_ps(a, a));
            _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps::<0b01>(pairs, pairs)))
        })
    }
}

/// AVX2 with FMA. A value of this type exists only in code compiled with those features (see
/// [`Avx2::new`]), which runs only on a CPU that has them; its methods rely on that.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2(());

impl Avx2 {
    /// The level's token. Only callable (without `unsafe`) from functions compiled with AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn new() -> Self {
        Avx2(())
    }
}

/// Evaluates AVX or AVX2 intrinsics inside an [`Avx2`] method.
macro_rules! avx {
    ($e:expr) => {
        // SAFETY: an `Avx2` value exists only in code compiled with AVX2 and FMA (`Avx2::new` has those
        // target features), so the CPU has them; the intrinsics take and give values only.
        unsafe { $e }
    };
}

impl Simd for Avx2 {
    type V = __m256;
    type I = __m256i;
    type M = __m256;
    const LANES: usize = 8;

    #[inline(always)]
    fn splat(self, x: f32) -> __m256 {
        avx!(_mm256_set1_ps(x))
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m256 {
        // SAFETY: the caller gives a pointer valid for reading 8 f32 (`loadu`: any alignment); the CPU
        // has AVX (see the type).
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: __m256) {
        // SAFETY: the caller gives a pointer valid for writing 8 f32 (`storeu`: any alignment); the CPU
        // has AVX (see the type).
        unsafe { _mm256_storeu_ps(p, v) }
    }

    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_add_ps(a, b))
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_sub_ps(a, b))
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_mul_ps(a, b))
    }
    #[inline(always)]
    fn div(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_div_ps(a, b))
    }
    #[inline(always)]
    fn mul_add(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        avx!(_mm256_fmadd_ps(a, b, c))
    }
    #[inline(always)]
    fn min(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_min_ps(a, b))
    }
    #[inline(always)]
    fn max(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_max_ps(a, b))
    }
    #[inline(always)]
    fn sqrt(self, a: __m256) -> __m256 {
        avx!(_mm256_sqrt_ps(a))
    }
    #[inline(always)]
    fn floor(self, a: __m256) -> __m256 {
        avx!(_mm256_floor_ps(a))
    }
    #[inline(always)]
    fn ceil(self, a: __m256) -> __m256 {
        avx!(_mm256_ceil_ps(a))
    }
    #[inline(always)]
    fn round(self, a: __m256) -> __m256 {
        avx!(_mm256_round_ps::<
            { _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC },
        >(a))
    }
    #[inline(always)]
    fn abs(self, a: __m256) -> __m256 {
        avx!(_mm256_andnot_ps(_mm256_set1_ps(-0.0), a))
    }
    #[inline(always)]
    fn neg(self, a: __m256) -> __m256 {
        avx!(_mm256_xor_ps(a, _mm256_set1_ps(-0.0)))
    }
    #[inline(always)]
    fn copysign(self, a: __m256, sign: __m256) -> __m256 {
        avx!({
            let bit = _mm256_set1_ps(-0.0);
            _mm256_or_ps(_mm256_andnot_ps(bit, a), _mm256_and_ps(bit, sign))
        })
    }

    #[inline(always)]
    fn lt(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_cmp_ps::<_CMP_LT_OQ>(a, b))
    }
    #[inline(always)]
    fn le(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_cmp_ps::<_CMP_LE_OQ>(a, b))
    }
    #[inline(always)]
    fn eq(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_cmp_ps::<_CMP_EQ_OQ>(a, b))
    }
    #[inline(always)]
    fn is_nan(self, a: __m256) -> __m256 {
        avx!(_mm256_cmp_ps::<_CMP_UNORD_Q>(a, a))
    }
    #[inline(always)]
    fn or(self, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_or_ps(a, b))
    }
    #[inline(always)]
    fn select(self, m: __m256, a: __m256, b: __m256) -> __m256 {
        avx!(_mm256_blendv_ps(b, a, m))
    }

    #[inline(always)]
    fn splat_i(self, x: i32) -> __m256i {
        avx!(_mm256_set1_epi32(x))
    }
    #[inline(always)]
    fn to_bits(self, a: __m256) -> __m256i {
        avx!(_mm256_castps_si256(a))
    }
    #[inline(always)]
    fn bits_to_f32(self, a: __m256i) -> __m256 {
        avx!(_mm256_castsi256_ps(a))
    }
    #[inline(always)]
    fn to_int(self, a: __m256) -> __m256i {
        // Rounds in the MXCSR mode, which Rust leaves at round to nearest even.
        avx!(_mm256_cvtps_epi32(a))
    }
    #[inline(always)]
    fn to_float(self, a: __m256i) -> __m256 {
        avx!(_mm256_cvtepi32_ps(a))
    }
    #[inline(always)]
    fn add_i(self, a: __m256i, b: __m256i) -> __m256i {
        avx!(_mm256_add_epi32(a, b))
    }
    #[inline(always)]
    fn sub_i(self, a: __m256i, b: __m256i) -> __m256i {
        avx!(_mm256_sub_epi32(a, b))
    }
    #[inline(always)]
    fn and_i(self, a: __m256i, b: __m256i) -> __m256i {
        avx!(_mm256_and_si256(a, b))
    }
    #[inline(always)]
    fn shl_23(self, a: __m256i) -> __m256i {
        avx!(_mm256_slli_epi32::<23>(a))
    }
    #[inline(always)]
    fn shr_23(self, a: __m256i) -> __m256i {
        avx!(_mm256_srai_epi32::<23>(a))
    }
    #[inline(always)]
    fn shr_1(self, a: __m256i) -> __m256i {
        avx!(_mm256_srai_epi32::<1>(a))
    }

    #[inline(always)]
    fn sum(self, a: __m256) -> f32 {
        // The two halves added, then as SSE2 sums four lanes.
        let halves = avx!(_mm_add_ps(
            _mm256_castps256_ps128(a),
            _mm256_extractf128_ps::<1>(a)
        ));
        Sse2::new().sum(halves)
    }
}
