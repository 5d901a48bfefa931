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
    use std::vec;
    use std::vec::Vec;

    use ember_core::ops::quant::requant::RequantRounding;

    use super::*;

    type AddFn = fn(&QuantAddParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);

    /// This architecture's vectorized Add, where the CPU runs it.
    fn vectorized() -> Option<AddFn> {
        #[cfg(target_arch = "x86_64")]
        return std::is_x86_feature_detected!("avx2").then_some(add_avx2 as AddFn);
        #[cfg(target_arch = "aarch64")]
        return Some(add_neon as AddFn);
    }

    /// The vectorized Add equals the reference on every element of equal-shaped operands (full
    /// vectors and a tail), of a scalar and of a per-channel operand, in both rounding modes, with a
    /// fused clamp. Short enough for Miri (`cargo xtask miri --ci`), which checks the unsafe loads and
    /// stores.
    #[test]
    fn vectorized_add_is_the_reference() {
        let Some(kernel) = vectorized() else {
            return;
        };
        let n = 21;
        let a: Vec<i8> = (0..n).map(|i| (i * 37 % 256) as u8 as i8).collect();
        let b: Vec<i8> = (0..n).map(|i| (i * 101 % 256) as u8 as i8).collect();
        for rounding in [RequantRounding::Double, RequantRounding::Single] {
            let p = QuantAddParams {
                rounding,
                ..QuantAddParams::from_scales((0.05, 3), (0.02, -7), (0.06, -2), -100, 120)
            };
            let run = |kernel: AddFn, b_dims: &[usize], b: &[i8]| {
                let mut y = vec![0i8; n];
                kernel(
                    &p,
                    In {
                        data: &a,
                        dims: &[n],
                    },
                    In {
                        data: b,
                        dims: b_dims,
                    },
                    Out {
                        data: &mut y,
                        dims: &[n],
                    },
                );
                y
            };
            assert_eq!(run(kernel, &[n], &b), run(reference::add, &[n], &b));
            assert_eq!(
                run(kernel, &[1], &b[..1]),
                run(reference::add, &[1], &b[..1])
            );
            // A per-channel operand of a [3, 7] tensor (period 7, below one vector) and of a
            // [1, 21] one (the whole row: one vector and a tail).
            let rows = |kernel: AddFn, a_dims: &[usize], b_dims: &[usize], b: &[i8]| {
                let mut y = vec![0i8; n];
                kernel(
                    &p,
                    In {
                        data: &a,
                        dims: a_dims,
                    },
                    In {
                        data: b,
                        dims: b_dims,
                    },
                    Out {
                        data: &mut y,
                        dims: a_dims,
                    },
                );
                y
            };
            assert_eq!(
                rows(kernel, &[3, 7], &[1, 7], &b[..7]),
                rows(reference::add, &[3, 7], &[1, 7], &b[..7])
            );
            assert_eq!(
                rows(kernel, &[1, 21], &[21], &b),
                rows(reference::add, &[1, 21], &[21], &b)
            );
        }
    }
}
