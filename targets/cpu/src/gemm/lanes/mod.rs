//! The vector operations the GEMM, convolution and depthwise kernels are written in, one implementation
//! per instruction-set level (the element-wise kernels use [`crate::simd`], whose trait is a token
//! passed by value and has the integer and mask operations the transcendental functions need; this one
//! is static, with the broadcast, transpose and clamp the register tiles need):
//! `scalar` (plain arrays that LLVM vectorizes for the target's baseline), `sse2`, `avx2` and `avx512` (x86-64),
//! `neon` (aarch64). The kernels (`gemm::tile`, `ops::nn::depthwise`, ...) are generic over [`Lanes`] and
//! `#[inline(always)]`; each level instantiates them inside a `#[target_feature]` function (see
//! [`crate::levels`]), so that the intrinsics are inlined with that level's instructions.

use ember_core::ops::math::activation::Activation;

pub(crate) mod scalar;

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
#[cfg(target_arch = "x86_64")]
pub(crate) mod sse2;

#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;

/// A vector of `LANES` f32 and the operations the kernels need.
///
/// # Safety
///
/// Every method may use instructions of the implementing level: call them only where the CPU has been
/// found to support it (the level's kernels check [`Isa::is_supported`](crate::Isa::is_supported) when
/// an op starts). Pointer arguments must be valid for `LANES` reads (`load`, `store`) or one read
/// (`broadcast`), with no alignment requirement.
pub(crate) trait Lanes {
    /// Number of f32 in a vector.
    const LANES: usize;
    /// The vector type.
    type V: Copy;

    /// All lanes 0.
    unsafe fn zero() -> Self::V;
    /// All lanes `x`.
    unsafe fn splat(x: f32) -> Self::V;
    /// `LANES` values from `p`.
    unsafe fn load(p: *const f32) -> Self::V;
    /// `*p` in every lane.
    unsafe fn broadcast(p: *const f32) -> Self::V;
    /// Writes the lanes to `p`.
    unsafe fn store(p: *mut f32, v: Self::V);
    /// `a * b + c` (fused on levels with FMA).
    unsafe fn mul_add(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a + b`.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// ONNX `Clip` per lane, as [`Activation::apply`] does it: `x < lo ? lo : x`, then `> hi ? hi`
    /// (NaN passes through; `lo > hi` gives `hi`).
    unsafe fn clamp(x: Self::V, lo: Self::V, hi: Self::V) -> Self::V;
    /// Sum of the lanes.
    unsafe fn sum(v: Self::V) -> f32;
    /// Transposes a `LANES x LANES` block: `dst[i * ldd + j] = src[j * lds + i]` for `i, j < LANES`
    /// (`src` rows and `dst` rows readable / writable for `LANES` values each).
    unsafe fn transpose(src: *const f32, lds: usize, dst: *mut f32, ldd: usize);
}

/// The bounds `(lo, hi)` whose ONNX `Clip` equals `act` on every input, NaN included: `None` is a clip to
/// `(-inf, inf)`, `Relu` to `(0, inf)`, `Relu6` to `(0, 6)`.
pub(crate) fn clip_bounds(act: Activation) -> (f32, f32) {
    match act {
        Activation::None => (f32::NEG_INFINITY, f32::INFINITY),
        Activation::Relu => (0.0, f32::INFINITY),
        Activation::Relu6 => (0.0, 6.0),
        Activation::Clip { min, max } => (min, max),
    }
}

/// ONNX `Clip` of one value (what [`Lanes::clamp`] does per lane).
#[inline(always)]
pub(crate) fn clamp1(x: f32, lo: f32, hi: f32) -> f32 {
    let lower = if x < lo { lo } else { x };
    if lower > hi {
        hi
    } else {
        lower
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_bounds_reproduce_every_activation() {
        let acts = [
            Activation::None,
            Activation::Relu,
            Activation::Relu6,
            Activation::Clip {
                min: -1.5,
                max: 2.0,
            },
            Activation::Clip {
                min: 3.0,
                max: -3.0,
            },
        ];
        let xs = [
            f32::NAN,
            f32::NEG_INFINITY,
            -7.0,
            -0.0,
            0.0,
            0.5,
            5.9,
            6.5,
            f32::INFINITY,
        ];
        for act in acts {
            let (lo, hi) = clip_bounds(act);
            for x in xs {
                let (want, got) = (act.apply(x), clamp1(x, lo, hi));
                // The sign of a zero is left open (ONNX does not fix it, and an optimized aarch64 build
                // turns either comparison into `fmaxnm`/`fminnm`, which give +0 for -0).
                assert!(
                    want.to_bits() == got.to_bits()
                        || (want.is_nan() && got.is_nan())
                        || (want == 0.0 && got == 0.0),
                    "{act:?}({x}): {got} != {want}"
                );
            }
        }
    }
}
