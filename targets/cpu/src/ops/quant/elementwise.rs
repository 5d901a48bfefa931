//! The driver of the vectorized int8 binary ops (`add.rs`, `mul.rs`): operands of the output's shape
//! run through the op's vectorized kernel of equal slices; a second operand that repeats whole along
//! the first (a scalar or per-channel constant: HardSwish's `+ 3`, a scale) runs it in pieces of its
//! period; any other broadcast, and each piece's last elements the vector leaves, run the reference.

use ember_core::ops::{In, Out};

/// A reference int8 binary kernel (`ember_core::ops::quant::add::add`, `mul::mul`).
pub(crate) type Reference<P> = fn(&P, In<'_, i8>, In<'_, i8>, Out<'_, i8>);

/// A vectorized kernel over equally long slices (`a`, `b`, `y`) that returns how many elements it
/// wrote (a whole number of vectors; the caller runs the reference on the rest).
pub(crate) type Flat<'f> = dyn Fn(&[i8], &[i8], &mut [i8]) -> usize + 'f;

/// How often `b` repeats along `a` and `y` (which have one shape) when `b` broadcasts by repeating
/// whole: its dims, leading 1s dropped, are the output's last dims (period 1 for a scalar). `None` for
/// any other broadcast.
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

/// `flat` on as much of equally long `a`, `b`, `y` as it takes, the reference on the rest.
fn pieces<P>(p: &P, a: &[i8], b: &[i8], y: &mut [i8], flat: &Flat<'_>, reference: Reference<P>) {
    let done = if a.len() == y.len() && b.len() == y.len() {
        flat(a, b, y)
    } else {
        0
    };
    let n = [y.len() - done];
    reference(
        p,
        In {
            data: a.get(done..).unwrap_or(&[]),
            dims: &n,
        },
        In {
            data: b.get(done..).unwrap_or(&[]),
            dims: &n,
        },
        Out {
            data: &mut y[done..],
            dims: &n,
        },
    );
}

/// `y = op(a, b)`: `flat` where the operands allow it (see the module doc), `reference` otherwise.
pub(crate) fn run<P>(
    p: &P,
    a: In<'_, i8>,
    b: In<'_, i8>,
    y: Out<'_, i8>,
    flat: &Flat<'_>,
    reference: Reference<P>,
) {
    let same = a.dims == y.dims
        && b.dims == y.dims
        && a.data.len() == y.data.len()
        && b.data.len() == y.data.len();
    if same {
        return pieces(p, a.data, b.data, y.data, flat, reference);
    }
    if period(&a, &b, &y).is_none() {
        return reference(p, a, b, y);
    }
    // `b` tiled up to 1,024 elements, so that each call runs many vectors.
    let mut wide = [0i8; 1024];
    let b = match b.data.len() {
        n if n <= wide.len() / 2 => {
            let tiled = wide.len() / n * n;
            for (w, &v) in wide[..tiled].iter_mut().zip(b.data.iter().cycle()) {
                *w = v;
            }
            &wide[..tiled]
        }
        _ => b.data,
    };
    for (a, y) in a.data.chunks(b.len()).zip(y.data.chunks_mut(b.len())) {
        pieces(p, a, &b[..a.len()], y, flat, reference);
    }
}

/// Asserts that `kernel` (a table's int8 binary op) equals `reference` on every element, for operands
/// of equal shapes (21 elements: full vectors and a tail), a scalar second operand, and per-channel
/// ones of periods 7 (below a vector) and 21 (one vector and a tail). Small enough for Miri.
#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn assert_matches_reference<P: core::fmt::Debug>(
    p: &P,
    kernel: Reference<P>,
    reference: Reference<P>,
) {
    use std::vec;
    use std::vec::Vec;

    let n = 21;
    let a: Vec<i8> = (0..n).map(|i| (i * 37 % 256) as u8 as i8).collect();
    let b: Vec<i8> = (0..n).map(|i| (i * 101 % 256) as u8 as i8).collect();
    let run = |kernel: Reference<P>, a_dims: &[usize], b_dims: &[usize], b: &[i8]| {
        let mut y = vec![0i8; n];
        kernel(
            p,
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
        (&[1, 21], &[21], &b[..]),
    ] {
        assert_eq!(
            run(kernel, a_dims, b_dims, b),
            run(reference, a_dims, b_dims, b),
            "{a_dims:?} by {b_dims:?}, {p:?}"
        );
    }
}
