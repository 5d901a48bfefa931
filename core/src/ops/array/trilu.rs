//! The upper or lower triangle of each matrix (the last two axes), the rest zeroed (ONNX `Trilu`,
//! opset 14). Any dtype: elements are copied or zeroed as bytes (zero bytes are 0 in every dtype).

pub use crate::schema::array::trilu::TriluParams;

use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::entry::{dims_of_first, op_entry, shape_reason};
use crate::ops::shape::{check_dims, ensure, same_dims};
use crate::Error;

/// Checks rank >= 2 and that `y` has the shape of `x`.
pub fn validate(x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(x.len() >= 2, "trilu input has rank below 2")?;
    ensure(same_dims(x, y), "trilu output shape differs from input")
}

/// Whether element `(row, col)` is in the kept triangle.
fn kept(p: &TriluParams, row: usize, col: usize) -> bool {
    // Dims fit in i64 (`check_dims`); `k` may be anything.
    let diagonal = col as i64 - row as i64;
    if p.upper {
        diagonal >= p.k
    } else {
        diagonal <= p.k
    }
}

/// Copies the kept triangle of each `[rows, cols]` matrix of `x` into `y` and zeroes the rest.
pub fn trilu(p: &TriluParams, x: AnyIn<'_>, y: AnyOut<'_>) {
    let rank = x.dims.len();
    let (rows, cols) = (x.dims[rank - 2], x.dims[rank - 1]);
    let size = x.dtype.size();
    let row_bytes = cols * size;
    if row_bytes == 0 || y.bytes.len() != x.bytes.len() {
        return;
    }
    for (r, (src, dst)) in x
        .bytes
        .chunks_exact(row_bytes)
        .zip(y.bytes.chunks_exact_mut(row_bytes))
        .enumerate()
    {
        let row = r % rows.max(1);
        for (col, (s, d)) in src.chunks_exact(size).zip(dst.chunks_exact_mut(size)).enumerate() {
            if kept(p, row, col) {
                d.copy_from_slice(s);
            } else {
                d.fill(0);
            }
        }
    }
}

/// Signature of a triangle kernel.
pub type TriluFn = fn(&TriluParams, AnyIn<'_>, AnyOut<'_>);

op_entry! {
    /// The [`Kernels::trilu`](crate::Kernels::trilu) entry, which runs
    /// [`OpKind::Trilu`](crate::OpKind::Trilu).
    Trilu: TriluFn = trilu, TriluParams, Same;
    validate |_p, o| shape_reason(validate(o.dims(0), o.out_dims()));
    infer |_p, x| dims_of_first(x);
    run |kernel, p, a| kernel(p, a.any(0), a.y);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::DType;

    fn run(upper: bool, k: i64, x: &[i64], dims: &[usize]) -> [i64; 6] {
        let mut y = [7i64; 6];
        let x_any = AnyIn {
            dtype: DType::I64,
            bytes: bytemuck::cast_slice(x),
            dims,
        };
        let y_any = AnyOut {
            dtype: DType::I64,
            bytes: bytemuck::cast_slice_mut(&mut y),
            dims,
        };
        trilu(&TriluParams { upper, k }, x_any, y_any);
        y
    }

    #[test]
    fn keeps_the_triangle_of_each_matrix() {
        // Two [1, 3] matrices and one [2, 3] matrix of 1..=6.
        let x = [1, 2, 3, 4, 5, 6];
        assert_eq!(run(true, 0, &x, &[2, 3]), [1, 2, 3, 0, 5, 6]);
        assert_eq!(run(false, 0, &x, &[2, 3]), [1, 0, 0, 4, 5, 0]);
        assert_eq!(run(true, 1, &x, &[2, 3]), [0, 2, 3, 0, 0, 6]);
        assert_eq!(run(false, -1, &x, &[2, 3]), [0, 0, 0, 4, 0, 0]);
        assert_eq!(run(true, -5, &x, &[2, 3]), x);
        // Each matrix counts its rows from 0.
        assert_eq!(run(true, 1, &x, &[2, 1, 3]), [0, 2, 3, 0, 5, 6]);
        assert!(validate(&[3], &[3]).is_err());
    }
}
