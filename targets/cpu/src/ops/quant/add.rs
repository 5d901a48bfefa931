//! int8 Add (`QuantAdd`): operands of the output's shape (a residual connection, the common case)
//! vectorized at AVX2 and AVX-512 (`x86::avx2::add_flat`) and NEON (`arm::add_flat`), 8 elements per
//! step, the reference's arithmetic exactly; so is a second operand that repeats whole along the
//! first (a scalar or per-channel constant: HardSwish's `+ 3`, a bias), in pieces of its period.
//! Other broadcasting and SSE2 run the reference kernel.

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
    let flat_add = |a: &[i8], b: &[i8], y: &mut [i8]| -> usize {
        if a.len() != y.len() || b.len() != y.len() {
            return 0;
        }
        // SAFETY: NEON is part of the aarch64 baseline; the slices are equally long (checked above).
        unsafe { super::arm::add_flat(p, a, b, y) }
    };
    if flat(&a, &b, &y) {
        let done = flat_add(a.data, b.data, y.data);
        return tail(p, a, b, y, done);
    }
    match period(&a, &b, &y) {
        Some(_) => periodic_add(p, a.data, b.data, y.data, &flat_add),
        None => reference::add(p, a, b, y),
    }
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

/// How often `b` repeats along `a` and `y` (which have one shape) when `b` broadcasts by repeating
/// whole: its dims, leading 1s dropped, are the output's last dims (a per-channel constant of an NHWC
/// tensor, or a scalar: period 1). `None` for any other broadcast.
fn period(a: &In<'_, i8>, b: &In<'_, i8>, y: &Out<'_, i8>) -> Option<usize> {
    let lead = b.dims.iter().take_while(|&&d| d == 1).count();
    let tail = &b.dims[lead..];
    let n = b.data.len();
    (a.dims == y.dims
        && a.data.len() == y.data.len()
        && y.dims.ends_with(tail)
        && n == tail.iter().product::<usize>()
        && n > 0
        && y.data.len().is_multiple_of(n))
    .then_some(n)
}

/// A vectorized Add of equally long slices (`a`, `b`, `y`) that returns how many elements it wrote.
type FlatAdd<'f> = dyn Fn(&[i8], &[i8], &mut [i8]) -> usize + 'f;

/// `flat_add` over `a` and `y` in pieces of `b`'s period (`b` first tiled up to 1,024 elements), the
/// rest of each piece by the reference.
fn periodic_add(p: &QuantAddParams, a: &[i8], b: &[i8], y: &mut [i8], flat_add: &FlatAdd<'_>) {
    // `b` tiled up to 1,024 elements, so that each call runs many vectors.
    let mut wide = [0i8; 1024];
    let b = match b.len() {
        0 => return,
        n if n <= wide.len() / 2 => {
            let tiled = wide.len() / n * n;
            for (w, &v) in wide[..tiled].iter_mut().zip(b.iter().cycle()) {
                *w = v;
            }
            &wide[..tiled]
        }
        _ => b,
    };
    for (a, y) in a.chunks(b.len()).zip(y.chunks_mut(b.len())) {
        let b = &b[..a.len()];
        let done = flat_add(a, b, y);
        let n = [a.len()];
        tail(
            p,
            In { data: a, dims: &n },
            In { data: b, dims: &n },
            Out { data: y, dims: &n },
            done,
        );
    }
}

/// The AVX2 and AVX-512 tables' `quant_add`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn add_avx2(p: &QuantAddParams, a: In<'_, i8>, b: In<'_, i8>, y: Out<'_, i8>) {
    use ember_core::ops::quant::requant::RequantRounding;
    let flat_add = |a: &[i8], b: &[i8], y: &mut [i8]| -> usize {
        if a.len() != y.len() || b.len() != y.len() {
            return 0;
        }
        // SAFETY: only the AVX2 and AVX-512 kernel tables hold this entry, and `Isa` hands them out
        // only on CPUs with AVX2; the three slices are equally long (checked above).
        unsafe {
            match p.rounding {
                RequantRounding::Double => super::x86::add_flat::<false>(p, a, b, y),
                RequantRounding::Single => super::x86::add_flat::<true>(p, a, b, y),
            }
        }
    };
    if flat(&a, &b, &y) {
        let done = flat_add(a.data, b.data, y.data);
        return tail(p, a, b, y, done);
    }
    match period(&a, &b, &y) {
        Some(_) => periodic_add(p, a.data, b.data, y.data, &flat_add),
        None => reference::add(p, a, b, y),
    }
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
