//! int8 Add (`QuantAdd`): operands of the output's shape (a residual connection, the common case)
//! vectorized at AVX2 and AVX-512 (`x86::avx2::add_flat`) and NEON (`arm::add_flat`), 8 elements per
//! step, the reference's arithmetic exactly; broadcasting and SSE2 run the reference kernel.

use ember_core::ops::quant::add::{self as reference, QuantAddParams};
use ember_core::ops::{In, Out};

/// Whether `a`, `b` and `y` have one shape (and their data the same length).
fn flat(a: &In<'_, i8>, b: &In<'_, i8>, y: &Out<'_, i8>) -> bool {
    a.dims == y.dims
        && b.dims == y.dims
        && a.data.len() == y.data.len()
        && b.data.len() == y.data.len()
}

/// The NEON tables' `quant_add`.
#[cfg(target_arch = "aarch64")]
pub(crate) fn add_neon(p: &QuantAddParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    if !flat(&a, &b, &y) {
        return reference::add(p, a, b, y);
    }
    // SAFETY: NEON is part of the aarch64 baseline; the slices are equally long (checked above).
    let done = unsafe { super::arm::add_flat(p, a.data, b.data, y.data) };
    tail(p, a, b, y, done);
}

/// The reference Add of the elements from `done` on (what a vectorized kernel left).
fn tail(p: &QuantAddParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>, done: usize) {
    let n = [y.data.len() - done];
    reference::add(
        p,
        In {
            data: a.data.get(done..).unwrap_or(&[]),
            dims: &n,
        },
        In {
            data: b.data.get(done..).unwrap_or(&[]),
            dims: &n,
        },
        Out {
            data: &mut y.data[done..],
            dims: &n,
        },
    );
}

/// The AVX2 and AVX-512 tables' `quant_add`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn add_avx2(p: &QuantAddParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    if !flat(&a, &b, &y) {
        return reference::add(p, a, b, y);
    }
    use ember_core::ops::quant::requant::RequantRounding;
    // SAFETY: only the AVX2 and AVX-512 kernel tables hold this entry, and `Isa` hands them out only
    // on CPUs with AVX2; the three slices are equally long (checked above).
    let done = unsafe {
        match p.rounding {
            RequantRounding::Double => super::x86::add_flat::<false>(p, a.data, b.data, y.data),
            RequantRounding::Single => super::x86::add_flat::<true>(p, a.data, b.data, y.data),
        }
    };
    tail(p, a, b, y, done);
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
    /// vectors and a tail), in both rounding modes, with a fused clamp; broadcasting goes to the
    /// reference. Short enough for Miri (`cargo xtask miri --ci`), which checks the unsafe loads and
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
        }
    }
}
