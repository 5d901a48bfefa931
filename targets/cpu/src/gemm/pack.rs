//! Packing `B` into panels for [`tile`](super::tile::tile): a panel holds `width` columns (a multiple of
//! the vector length) for every `k`, `k`-major (`panel[kk * width + j]`), the columns past `N` zero.

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

/// Rows of `k` handled at a time when transposing columns, so that the panel part written stays in L1.
const K_BLOCK: usize = 64;

/// Packs columns `j0..j0 + valid` of `B` (all `k` rows) into `out` as one panel `width` wide (`out`
/// holds `k * width` values; columns `valid..width` are zeros).
pub(crate) fn pack_panel(
    b: BMat<'_>,
    k: usize,
    j0: usize,
    valid: usize,
    width: usize,
    out: &mut [f32],
) {
    let out = &mut out[..k * width];
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
            for k0 in (0..k).step_by(K_BLOCK) {
                let kn = K_BLOCK.min(k - k0);
                let dst = &mut out[k0 * width..][..kn * width];
                for j in 0..valid {
                    let col = &data[(j0 + j) * ld + k0..][..kn];
                    for (d, &s) in dst[j..].iter_mut().step_by(width).zip(col) {
                        *d = s;
                    }
                }
            }
        }
    }
}
