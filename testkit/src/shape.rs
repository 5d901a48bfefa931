//! Shapes of row-major tensors: element counts, flat positions and multi-indices, numpy broadcasting, and
//! the small dims the suites draw (now and then 0, an empty tensor).

use ember_core::ops::{In, Out};
use proptest::collection::vec;
use proptest::prelude::*;

/// Number of elements of a shape.
pub fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// Runs `kernel` into an output of `y_dims` filled with `fill` (so that elements it skips show), and
/// returns the output.
pub fn run_into<T: Clone>(y_dims: &[usize], fill: T, kernel: impl FnOnce(Out<'_, T>)) -> Vec<T> {
    let mut y = vec![fill; numel(y_dims)];
    kernel(Out {
        data: &mut y,
        dims: y_dims,
    });
    y
}

/// Runs an elementwise `kernel` on `x` (dims `[len]`) into an output of the same dims filled with
/// `fill`, and returns the output.
pub fn run_elementwise<T, U: Clone>(
    x: &[T],
    fill: U,
    kernel: impl FnOnce(In<'_, T>, Out<'_, U>),
) -> Vec<U> {
    let dims = [x.len()];
    run_into(&dims, fill, |y| {
        kernel(
            In {
                data: x,
                dims: &dims,
            },
            y,
        )
    })
}

/// Row-major flat position of `index` in `dims`.
pub fn flat(index: &[usize], dims: &[usize]) -> usize {
    index.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// Multi-index of row-major flat position `position` in `dims`.
pub fn unflat(mut position: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (i, &d) in dims.iter().enumerate().rev() {
        index[i] = position % d;
        position /= d;
    }
    index
}

/// A small dim, now and then 0 (an empty tensor; kernels must cope).
pub fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![12 => 1usize..=4, 1 => Just(0usize)]
}

/// An operand that broadcasts to `full`: either `full` itself, or a suffix of it with some dims set to 1.
pub fn broadcast_operand(full: Vec<usize>) -> impl Strategy<Value = Vec<usize>> {
    let r = full.len();
    let suffix = full.clone();
    prop_oneof![
        1 => Just(full),
        2 => (0..=r, vec(any::<bool>(), r)).prop_map(move |(rank, ones)| {
            suffix[r - rank..]
                .iter()
                .zip(&ones)
                .map(|(&d, &one)| if one { 1 } else { d })
                .collect()
        }),
    ]
}

/// Numpy broadcasting of two shapes known to be compatible: right-aligned, a dim of 1 stretches.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let r = a.len().max(b.len());
    let at = |dims: &[usize], i: usize| {
        // Axis i of the right-aligned shape, 1 where `dims` is too short.
        (i + dims.len()).checked_sub(r).map_or(1, |j| dims[j])
    };
    (0..r)
        .map(|i| {
            let (da, db) = (at(a, i), at(b, i));
            if da == 1 {
                db
            } else {
                da
            }
        })
        .collect()
}

/// Multi-index in an operand of shape `dims` of the output multi-index `y_index` (right-aligned;
/// broadcast axes read 0).
pub fn broadcast_index(y_index: &[usize], dims: &[usize]) -> Vec<usize> {
    let skip = y_index.len() - dims.len();
    dims.iter()
        .zip(&y_index[skip..])
        .map(|(&d, &i)| if d == 1 { 0 } else { i })
        .collect()
}

/// Flat position in an operand of shape `dims` of the output multi-index `y_index`.
pub fn broadcast_source(y_index: &[usize], dims: &[usize]) -> usize {
    flat(&broadcast_index(y_index, dims), dims)
}
