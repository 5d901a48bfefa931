//! The portable level: a "vector" is `[f32; 4]` and every operation a loop over its lanes, which LLVM
//! turns into the target's baseline SIMD (SSE2 on x86-64, NEON on aarch64) without any intrinsic.
//! Multiply and add stay two roundings (Rust never fuses them), as in the reference kernels.

use super::{clamp1, Lanes};

/// Four f32 lanes in plain Rust.
pub(crate) struct Scalar;

impl Lanes for Scalar {
    const LANES: usize = 4;
    type V = [f32; 4];

    #[inline(always)]
    unsafe fn zero() -> [f32; 4] {
        [0.0; 4]
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> [f32; 4] {
        [x; 4]
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> [f32; 4] {
        // SAFETY: the caller guarantees 4 readable f32 at `p` (trait contract); unaligned is allowed.
        unsafe { p.cast::<[f32; 4]>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn broadcast(p: *const f32) -> [f32; 4] {
        // SAFETY: the caller guarantees one readable f32 at `p`.
        [unsafe { *p }; 4]
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: [f32; 4]) {
        // SAFETY: the caller guarantees 4 writable f32 at `p`; unaligned is allowed.
        unsafe { p.cast::<[f32; 4]>().write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn mul_add(a: [f32; 4], b: [f32; 4], c: [f32; 4]) -> [f32; 4] {
        core::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    unsafe fn add(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        core::array::from_fn(|i| a[i] + b[i])
    }
    #[inline(always)]
    unsafe fn clamp(x: [f32; 4], lo: [f32; 4], hi: [f32; 4]) -> [f32; 4] {
        core::array::from_fn(|i| clamp1(x[i], lo[i], hi[i]))
    }
    #[inline(always)]
    unsafe fn sum(v: [f32; 4]) -> f32 {
        (v[0] + v[2]) + (v[1] + v[3])
    }
    #[inline(always)]
    unsafe fn transpose(src: *const f32, lds: usize, dst: *mut f32, ldd: usize) {
        for i in 0..4 {
            for j in 0..4 {
                // SAFETY: i, j < 4: inside the rows the caller guarantees.
                unsafe { *dst.add(i * ldd + j) = *src.add(j * lds + i) };
            }
        }
    }
}
