//! int8 Add (`QuantAdd`) vectorized at AVX2 and AVX-512 (`x86::avx2::add_flat`) and NEON
//! (`arm::add_flat`), 8 elements per step, the reference's arithmetic exactly: operands of the
//! output's shape (a residual connection), or a second one that repeats along the first (a scalar or
//! per-channel constant), as `elementwise::run` drives them. Other broadcasting and SSE2 run the
//! reference kernel.

use ember_core::ops::quant::add::{self as reference, QuantAddParams};
use ember_core::ops::{In, Out};

/// The NEON tables' `quant_add`.
#[cfg(target_arch = "aarch64")]
pub(crate) fn add_neon(p: &QuantAddParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    let flat = |a: &[i8], b: &[i8], y: &mut [i8]| -> usize {
        // SAFETY: NEON is part of the aarch64 baseline; `elementwise::run` hands over equally long
        // slices.
        unsafe { super::arm::add_flat(p, a, b, y) }
    };
    super::elementwise::run(p, a, b, y, &flat, reference::add);
}

/// The AVX2 and AVX-512 tables' `quant_add`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn add_avx2(p: &QuantAddParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    use ember_core::ops::quant::requant::RequantRounding;
    let flat = |a: &[i8], b: &[i8], y: &mut [i8]| -> usize {
        // SAFETY: only the AVX2 and AVX-512 kernel tables hold this entry, and `Isa` hands them out
        // only on CPUs with AVX2; `elementwise::run` hands over equally long slices.
        unsafe {
            match p.rounding {
                RequantRounding::Double => super::x86::add_flat::<false>(p, a, b, y),
                RequantRounding::Single => super::x86::add_flat::<true>(p, a, b, y),
            }
        }
    };
    super::elementwise::run(p, a, b, y, &flat, reference::add);
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use ember_core::ops::quant::requant::RequantRounding;

    use super::*;

    /// The vectorized Add equals the reference (see `assert_matches_reference` for the shapes), in
    /// both rounding modes, with a fused clamp. Short enough for Miri (`cargo xtask miri --ci`),
    /// which checks the unsafe loads and stores.
    #[test]
    fn vectorized_add_is_the_reference() {
        #[cfg(target_arch = "x86_64")]
        let kernel = add_avx2;
        #[cfg(target_arch = "x86_64")]
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        #[cfg(target_arch = "aarch64")]
        let kernel = add_neon;
        for rounding in [RequantRounding::Double, RequantRounding::Single] {
            let p = QuantAddParams {
                rounding,
                ..QuantAddParams::from_scales((0.05, 3), (0.02, -7), (0.06, -2), -100, 120)
            };
            super::super::elementwise::assert_matches_reference(&p, kernel, reference::add);
        }
    }
}
