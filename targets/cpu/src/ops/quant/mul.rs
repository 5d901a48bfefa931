//! int8 Mul (`QuantMul`) vectorized at AVX2 and AVX-512 (`x86::avx2::mul_flat`), 8 elements per
//! step, the reference's arithmetic exactly: operands of the output's shape, or a second one that
//! repeats along the first (a scalar or per-channel constant, HardSwish's product), as
//! `elementwise::run` drives them. Other broadcasting, SSE2 and NEON run the reference kernel.

#[cfg(target_arch = "x86_64")]
use ember_core::ops::quant::mul::{self as reference, QuantMulParams};
#[cfg(target_arch = "x86_64")]
use ember_core::ops::{In, Out};

/// The AVX2 and AVX-512 tables' `quant_mul`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn mul_avx2(p: &QuantMulParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    use ember_core::ops::quant::requant::RequantRounding;
    let flat = |a: &[i8], b: &[i8], y: &mut [i8]| -> usize {
        // SAFETY: only the AVX2 and AVX-512 kernel tables hold this entry, and `Isa` hands them out
        // only on CPUs with AVX2; `elementwise::run` hands over equally long slices.
        unsafe {
            match p.rounding {
                RequantRounding::Double => super::x86::mul_flat::<false>(p, a, b, y),
                RequantRounding::Single => super::x86::mul_flat::<true>(p, a, b, y),
            }
        }
    };
    super::elementwise::run(p, a, b, y, &flat, reference::mul);
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use ember_core::ops::quant::requant::RequantRounding;

    use super::*;

    /// The vectorized Mul equals the reference (see `assert_matches_reference` for the shapes), in
    /// both rounding modes, with a fused clamp and with a left shift. Short enough for Miri (`cargo
    /// xtask miri --ci`), which checks the unsafe loads and stores.
    #[test]
    fn vectorized_mul_is_the_reference() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        for rounding in [RequantRounding::Double, RequantRounding::Single] {
            for (y_scale, act) in [(0.9, (-100, 120)), (0.0005, (i8::MIN, i8::MAX))] {
                let p = QuantMulParams {
                    rounding,
                    ..QuantMulParams::from_scales(
                        (0.05, 3),
                        (0.02, -7),
                        (y_scale, -2),
                        act.0,
                        act.1,
                    )
                };
                super::super::elementwise::assert_matches_reference(&p, mul_avx2, reference::mul);
            }
        }
    }
}
