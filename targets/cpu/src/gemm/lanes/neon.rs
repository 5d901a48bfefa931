//! The aarch64 baseline level: 4-wide NEON vectors with fused multiply-add (`fmla`).

use core::arch::aarch64::*;

use super::Lanes;

/// Four f32 lanes in a NEON register.
pub(crate) struct Neon;

impl Lanes for Neon {
    const LANES: usize = 4;
    type V = float32x4_t;

    #[inline(always)]
    unsafe fn zero() -> float32x4_t {
        // SAFETY: NEON, baseline on aarch64.
        unsafe { vdupq_n_f32(0.0) }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> float32x4_t {
        // SAFETY: NEON, baseline on aarch64.
        unsafe { vdupq_n_f32(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> float32x4_t {
        // SAFETY: the caller guarantees 4 readable f32 at `p`; `ld1` takes any alignment.
        unsafe { vld1q_f32(p) }
    }
    #[inline(always)]
    unsafe fn broadcast(p: *const f32) -> float32x4_t {
        // SAFETY: the caller guarantees one readable f32 at `p`.
        unsafe { vld1q_dup_f32(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: float32x4_t) {
        // SAFETY: the caller guarantees 4 writable f32 at `p`; `st1` takes any alignment.
        unsafe { vst1q_f32(p, v) }
    }
    #[inline(always)]
    unsafe fn mul_add(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        // SAFETY: NEON, baseline on aarch64.
        unsafe { vfmaq_f32(c, a, b) }
    }
    #[inline(always)]
    unsafe fn add(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        // SAFETY: NEON, baseline on aarch64.
        unsafe { vaddq_f32(a, b) }
    }
    #[inline(always)]
    unsafe fn clamp(x: float32x4_t, lo: float32x4_t, hi: float32x4_t) -> float32x4_t {
        // SAFETY: NEON, baseline on aarch64.
        unsafe {
            // `fmax`/`fmin` turn a NaN bound into NaN; compare and select keep `Activation::apply`'s
            // order exactly: `lo > x ? lo : x`, then `hi < that ? hi : that`.
            let lower = vbslq_f32(vcgtq_f32(lo, x), lo, x);
            vbslq_f32(vcltq_f32(hi, lower), hi, lower)
        }
    }
    #[inline(always)]
    unsafe fn sum(v: float32x4_t) -> f32 {
        // SAFETY: NEON, baseline on aarch64.
        unsafe { vaddvq_f32(v) }
    }
    #[inline(always)]
    unsafe fn transpose(src: *const f32, lds: usize, dst: *mut f32, ldd: usize) {
        // SAFETY: NEON, baseline on aarch64; 4 rows of 4 readable (src) / writable (dst) values.
        unsafe {
            let r0 = vld1q_f32(src);
            let r1 = vld1q_f32(src.add(lds));
            let r2 = vld1q_f32(src.add(2 * lds));
            let r3 = vld1q_f32(src.add(3 * lds));
            let t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)); // a0 b0 a2 b2
            let t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1)); // a1 b1 a3 b3
            let t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3)); // c0 d0 c2 d2
            let t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3)); // c1 d1 c3 d3
            vst1q_f32(dst, vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)));
            vst1q_f32(dst.add(ldd), vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)));
            vst1q_f32(dst.add(2 * ldd), vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)));
            vst1q_f32(dst.add(3 * ldd), vreinterpretq_f32_f64(vtrn2q_f64(t1, t3)));
        }
    }
}
