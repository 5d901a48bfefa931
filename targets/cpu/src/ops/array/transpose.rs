//! Transpose of f32 tensors. The permutation is first reduced to the fewest axes (axes of 1 dropped,
//! input axes that stay neighbours in the same order merged); then either the innermost axis stays
//! innermost, and each output row is one copied run, or the output is a set of 2-D transposes (the
//! input's innermost axis against the output's), done in square tiles so that both the strided reads
//! and the strided writes stay in cache (or, for a few output columns, one long pass per column).
//! Level-independent: the copies are what the time goes to.

use ember_core::ops::array::transpose::TransposeParams;
use ember_core::ops::{In, Out, MAX_RANK};

use crate::ops::Odometer;

/// Side of the square tiles of the 2-D transposes.
const TILE: usize = 16;

/// Below this many output columns, a 2-D transpose goes column by column instead of by tiles.
const NARROW: usize = 8;

/// A permutation reduced to its fewest axes: `dims` of the reduced input, and `perm` (output axis `i`
/// is input axis `perm[i]`), `rank` of them.
struct Reduced {
    rank: usize,
    dims: [usize; MAX_RANK],
    perm: [usize; MAX_RANK],
}

impl Reduced {
    fn new(p: &TransposeParams, x: &[usize]) -> Reduced {
        let rank = x.len();
        // Input axes kept (size > 1), renumbered in input order.
        let mut new_index = [usize::MAX; MAX_RANK];
        let mut kept = 0;
        for (axis, &d) in x.iter().enumerate() {
            if d != 1 {
                new_index[axis] = kept;
                kept += 1;
            }
        }
        // The output order of the kept axes, merging an axis into the previous one when it follows
        // it in the input too.
        let mut r = Reduced {
            rank: 0,
            dims: [1; MAX_RANK],
            perm: [0; MAX_RANK],
        };
        // For each reduced axis, the kept input axis it starts with.
        let mut first = [0usize; MAX_RANK];
        let mut previous: Option<usize> = None;
        for &axis in &p.perm[..rank] {
            let axis = usize::from(axis);
            let index = new_index[axis];
            if index == usize::MAX {
                continue;
            }
            match previous {
                Some(prev) if index == prev + 1 => {}
                _ => {
                    first[r.rank] = index;
                    r.rank += 1;
                }
            }
            previous = Some(index);
        }
        // Reduced axes in input order: sort the starting kept axes; each spans until the next start.
        let mut starts = [0usize; MAX_RANK];
        starts[..r.rank].copy_from_slice(&first[..r.rank]);
        starts[..r.rank].sort_unstable();
        let kept_dims = x.iter().copied().filter(|&d| d != 1);
        let mut kept_dims_arr = [1usize; MAX_RANK];
        for (slot, d) in kept_dims_arr.iter_mut().zip(kept_dims) {
            *slot = d;
        }
        for (i, &start) in starts[..r.rank].iter().enumerate() {
            let end = if i + 1 < r.rank { starts[i + 1] } else { kept };
            r.dims[i] = kept_dims_arr[start..end].iter().product();
        }
        for (o, &start) in first[..r.rank].iter().enumerate() {
            r.perm[o] = starts[..r.rank]
                .iter()
                .position(|&s| s == start)
                .unwrap_or(0);
        }
        r
    }
}

/// `y[i0, i1, ...] = x[...]` with the axes permuted (any shapes `validate` accepts).
pub(crate) fn transpose(p: &TransposeParams, x: In<'_>, y: Out<'_>) {
    if y.data.is_empty() {
        return;
    }
    let r = Reduced::new(p, x.dims);
    let rank = r.rank;
    if (0..rank).all(|i| r.perm[i] == i) {
        y.data.copy_from_slice(x.data);
        return;
    }
    // rank >= 2 here. Row-major strides of the reduced input and output.
    let mut x_strides = [0usize; MAX_RANK];
    let mut step = 1;
    for d in (0..rank).rev() {
        x_strides[d] = step;
        step *= r.dims[d];
    }
    let mut out_dims = [1usize; MAX_RANK];
    for (o, &axis) in r.perm[..rank].iter().enumerate() {
        out_dims[o] = r.dims[axis];
    }
    let mut y_strides = [0usize; MAX_RANK];
    let mut step = 1;
    for d in (0..rank).rev() {
        y_strides[d] = step;
        step *= out_dims[d];
    }
    // The input stride of each output axis.
    let mut read = [0usize; MAX_RANK];
    for (o, &axis) in r.perm[..rank].iter().enumerate() {
        read[o] = x_strides[axis];
    }
    let last = rank - 1;
    if r.perm[last] == last {
        // The innermost axis stays: each output row is a run of the input.
        let run = out_dims[last];
        let mut rows = y.data.chunks_exact_mut(run);
        for [at] in Odometer::new(&out_dims[..last], [read]) {
            if let Some(row) = rows.next() {
                row.copy_from_slice(&x.data[at..at + run]);
            }
        }
        return;
    }
    // Output axis `q` runs along the input's innermost axis (input stride 1); the output's innermost
    // axis reads with stride `read[last]`. Every other axis walks the tiles' corners.
    let q = r.perm[..rank].iter().position(|&a| a == last).unwrap_or(0);
    let mut outer_dims = [1usize; MAX_RANK];
    let (mut outer_read, mut outer_write) = ([0usize; MAX_RANK], [0usize; MAX_RANK]);
    let mut n = 0;
    for o in (0..last).filter(|&o| o != q) {
        outer_dims[n] = out_dims[o];
        outer_read[n] = read[o];
        outer_write[n] = y_strides[o];
        n += 1;
    }
    let plane = Plane {
        rows: out_dims[q],
        cols: out_dims[last],
        read_col: read[last],
        write_row: y_strides[q],
    };
    for [from, to] in Odometer::new(&outer_dims[..n], [outer_read, outer_write]) {
        plane.transpose(&x.data[from..], &mut y.data[to..]);
    }
}

/// A 2-D transpose inside the tensors: `y[i * write_row + j] = x[i + j * read_col]` for `i < rows`,
/// `j < cols`.
struct Plane {
    rows: usize,
    cols: usize,
    read_col: usize,
    write_row: usize,
}

impl Plane {
    fn transpose(&self, x: &[f32], y: &mut [f32]) {
        if self.rows == 0 || self.cols == 0 {
            return;
        }
        // The largest indices read and written; every other one is below them.
        let last_read = (self.rows - 1) + (self.cols - 1) * self.read_col;
        let last_write = (self.rows - 1) * self.write_row + self.cols - 1;
        if last_read >= x.len() || last_write >= y.len() {
            debug_assert!(false, "transpose plane out of its tensors");
            return;
        }
        let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
        if self.cols < NARROW {
            // A few output columns (NCHW to NHWC with 3 channels): one long pass per column, reading
            // a contiguous input row and writing every `write_row`-th output.
            for j in 0..self.cols {
                for i in 0..self.rows {
                    // SAFETY: as below.
                    unsafe { *yp.add(i * self.write_row + j) = *xp.add(i + j * self.read_col) };
                }
            }
            return;
        }
        for i0 in (0..self.rows).step_by(TILE) {
            let i1 = (i0 + TILE).min(self.rows);
            for j0 in (0..self.cols).step_by(TILE) {
                let j1 = (j0 + TILE).min(self.cols);
                for i in i0..i1 {
                    for j in j0..j1 {
                        // SAFETY: i < rows and j < cols, so both indices are at most the last ones,
                        // checked above to lie within `x` and `y`.
                        unsafe { *yp.add(i * self.write_row + j) = *xp.add(i + j * self.read_col) };
                    }
                }
            }
        }
    }
}
