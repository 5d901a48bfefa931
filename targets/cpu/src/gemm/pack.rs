//! Packing `B` into panels for [`tile`](super::tile::tile): a panel holds `width` columns (a multiple of
//! the vector length) for every `k`, `k`-major (`panel[kk * width + j]`), the columns past `N` zero.
//! Rows of a row-major `B` are copied; columns of weights are transposed a vector-square block at a
//! time ([`Lanes::transpose`]).

use crate::gemm::lanes::Lanes;

/// The right operand of a GEMM, `B[kk, j]` for `kk < K`, `j < N`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BMat<'a> {
    /// `B[kk, j] = data[kk * ld + j]`: a row-major `[K, N]` matrix (MatMul's right operand).
    Rows {
        /// The elements.
        data: &'a [f32],
        /// Row stride (`N` for a dense matrix).
        ld: usize,
    },
    /// `B[kk, j] = data[j * ld + kk]`: each column contiguous, as the rows of OHWI convolution weights
    /// and of fully connected weights `[N, K]`.
    Cols {
        /// The elements.
        data: &'a [f32],
        /// Stride between columns (`K` for a dense matrix).
        ld: usize,
    },
}

impl BMat<'_> {
    /// Whether every element of a `k x n` matrix is inside `data`.
    pub(crate) fn fits(&self, k: usize, n: usize) -> bool {
        let (data, ld, outer, inner) = match *self {
            BMat::Rows { data, ld } => (data, ld, k, n),
            BMat::Cols { data, ld } => (data, ld, n, k),
        };
        outer == 0
            || inner == 0
            || (inner <= ld || outer == 1)
                && (outer - 1)
                    .checked_mul(ld)
                    .and_then(|s| s.checked_add(inner))
                    .is_some_and(|end| end <= data.len())
    }
}

/// One panel of `B` to pack: columns `j0..j0 + valid` (all `k` rows), as a panel `width` wide.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Panel<'a> {
    /// The matrix.
    pub b: BMat<'a>,
    /// Rows of `B`.
    pub k: usize,
    /// The panel's first column.
    pub j0: usize,
    /// Columns of `B` in the panel.
    pub valid: usize,
    /// Width of the panel (columns `valid..width` are zeros).
    pub width: usize,
}

/// Packs one panel of `B`: [`pack_panel`] at one level.
pub(crate) type PackFn = unsafe fn(Panel<'_>, &mut [f32]);

/// Packs columns `j0..j0 + valid` of `B` (all `k` rows) into `out` as one panel `width` wide (`out`
/// holds `k * width` values; columns `valid..width` are zeros), with level `S`.
///
/// # Safety
///
/// The level `S` runs on this CPU; `b` fits a `k x (j0 + valid)` matrix (`BMat::fits`), `valid <= width`.
#[inline(always)]
pub(crate) unsafe fn pack_panel<S: Lanes>(
    Panel {
        b,
        k,
        j0,
        valid,
        width,
    }: Panel<'_>,
    out: &mut [f32],
) {
    let out = &mut out[..k * width];
    if k == 0 {
        return;
    }
    match b {
        BMat::Rows { data, ld } => {
            for (kk, dst) in out.chunks_exact_mut(width).enumerate() {
                let src = &data[kk * ld + j0..][..valid];
                dst[..valid].copy_from_slice(src);
                dst[valid..].fill(0.0);
            }
        }
        BMat::Cols { data, ld } => {
            if valid < width {
                out.fill(0.0);
            }
            let lanes = S::LANES;
            let (k_blocks, j_blocks) = (k / lanes * lanes, valid / lanes * lanes);
            for k0 in (0..k_blocks).step_by(lanes) {
                for jb in (0..j_blocks).step_by(lanes) {
                    let src = &data[(j0 + jb) * ld + k0..];
                    let dst = &mut out[k0 * width + jb..];
                    // The block's last source row and destination row end inside the slices.
                    assert!((lanes - 1) * ld + lanes <= src.len());
                    assert!((lanes - 1) * width + lanes <= dst.len());
                    // SAFETY: the level runs here (caller); the block's rows are in bounds (asserted).
                    unsafe { S::transpose(src.as_ptr(), ld, dst.as_mut_ptr(), width) };
                }
            }
            // The columns past the last whole block, and the rows of k past the last whole block.
            for j in j_blocks..valid {
                let col = &data[(j0 + j) * ld..][..k];
                for (d, &s) in out[j..].iter_mut().step_by(width).zip(col) {
                    *d = s;
                }
            }
            for j in 0..j_blocks {
                let col = &data[(j0 + j) * ld..][..k];
                for (kk, &s) in col.iter().enumerate().skip(k_blocks) {
                    out[kk * width + j] = s;
                }
            }
        }
    }
}
