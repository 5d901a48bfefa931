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
    use std::vec;
    use std::vec::Vec;

    use ember_core::ops::quant::requant::RequantRounding;

    use super::*;

    type MulFn = fn(&QuantMulParams, In<'_, i8>, In<'_, i8>, Out<'_, i8>);

    /// The vectorized Mul equals the reference on every element: equal shapes (full vectors and a
    /// tail), a scalar and a per-channel operand, both rounding modes, a fused clamp, a left shift.
    /// Short enough for Miri (`cargo xtask miri --ci`), which checks the unsafe loads and stores.
    #[test]
    fn vectorized_mul_is_the_reference() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let n = 21;
        let a: Vec<i8> = (0..n).map(|i| (i * 37 % 256) as u8 as i8).collect();
        let b: Vec<i8> = (0..n).map(|i| (i * 101 % 256) as u8 as i8).collect();
        for rounding in [RequantRounding::Double, RequantRounding::Single] {
            for (ys, act) in [(0.9, (-100, 120)), (0.0005, (i8::MIN, i8::MAX))] {
                let p = QuantMulParams {
                    rounding,
                    ..QuantMulParams::from_scales((0.05, 3), (0.02, -7), (ys, -2), act.0, act.1)
                };
                let run = |kernel: MulFn, a_dims: &[usize], b_dims: &[usize], b: &[i8]| {
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
                for (a_dims, b_dims, b) in [
                    (&[n][..], &[n][..], &b[..]),
                    (&[n], &[1], &b[..1]),
                    (&[3, 7], &[1, 7], &b[..7]),
                ] {
                    assert_eq!(
                        run(mul_avx2, a_dims, b_dims, b),
                        run(reference::mul, a_dims, b_dims, b),
                        "{a_dims:?} x {b_dims:?}, {rounding:?}, output scale {ys}"
                    );
                }
            }
        }
    }
}
