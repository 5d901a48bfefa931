//! The GEMM kernel for few rows of `A` (`m` up to a few dozen) and `B` given by columns (weights
//! `[N, K]`): each output is the dot product of a row of `A` and a row of `W`, computed with vectors
//! along `k` and summed across the lanes at the end. Nothing is packed, so each row of `W` is read once
//! (from memory, for a layer's weights) instead of being copied into panels that only a few rows of `A`
//! would then use.

use core::array;

use crate::gemm::lanes::{clamp1, Lanes};

/// One call of [`dots`]: an `MR x NW` block of `C`; the pointers are checked by the caller.
pub(crate) struct DotsArgs {
    /// Length of the dot products.
    pub k: usize,
    /// `A[r, kk]` is `a[r * lda + kk]` for `r < rows`, `kk < k`.
    pub a: *const f32,
    /// Row stride of `A`.
    pub lda: usize,
    /// Rows of `A` in the block (1 to `MR`); the others reuse the last one and are not stored.
    pub rows: usize,
    /// `W[j, kk]` is `w[j * ldw + kk]` for `j < cols`, `kk < k`.
    pub w: *const f32,
    /// Row stride of `W`.
    pub ldw: usize,
    /// Rows of `W` (columns of `C`) in the block (1 to `NW`).
    pub cols: usize,
    /// `C[r, j]` is `c[r * ldc + j]`, `rows x cols` written.
    pub c: *mut f32,
    /// Row stride of `C`.
    pub ldc: usize,
    /// Values added to the sums (`init[r * ld_init + j]`, a residual), or null.
    pub init: *const f32,
    /// Row stride of `init`.
    pub ld_init: usize,
    /// `cols` values added to the columns, or null.
    pub bias: *const f32,
    /// Lower clip bound.
    pub lo: f32,
    /// Upper clip bound.
    pub hi: f32,
}

/// A block of dot products, [`dots`] at one level and block shape.
pub(crate) type DotsFn = unsafe fn(&DotsArgs);

/// `C = clip(A * W^T + init + bias)` over the block.
///
/// # Safety
///
/// The level `S` runs on this CPU; the pointers of `d` are valid as documented there (`rows, cols >= 1`).
#[inline(always)]
pub(crate) unsafe fn dots<S: Lanes, const MR: usize, const NW: usize>(d: &DotsArgs) {
    let lanes = S::LANES;
    // SAFETY: the caller's contract; every access stays in the rows and the `k` values it documents
    // (missing rows of either side read the last valid one).
    unsafe {
        let a: [*const f32; MR] = array::from_fn(|r| d.a.add(r.min(d.rows - 1) * d.lda));
        let w: [*const f32; NW] = array::from_fn(|j| d.w.add(j.min(d.cols - 1) * d.ldw));
        let mut acc = [[S::zero(); NW]; MR];
        let mut kk = 0;
        while kk + lanes <= d.k {
            let av: [S::V; MR] = array::from_fn(|r| S::load(a[r].add(kk)));
            for j in 0..NW {
                let wv = S::load(w[j].add(kk));
                for r in 0..MR {
                    acc[r][j] = S::mul_add(av[r], wv, acc[r][j]);
                }
            }
            kk += lanes;
        }
        // Sums across the lanes for the whole block first, with constant indices, so that the
        // accumulators stay in registers (indexing them by the block's actual size would put them in
        // memory, stored on every iteration of the loop above).
        let mut sums = [[0.0f32; NW]; MR];
        for (sums_r, acc_r) in sums.iter_mut().zip(&acc) {
            for (s, &acc_rj) in sums_r.iter_mut().zip(acc_r) {
                *s = S::sum(acc_rj);
            }
        }
        for (r, sums_r) in sums.iter().enumerate().take(d.rows) {
            for (j, &sum) in sums_r.iter().enumerate().take(d.cols) {
                let mut s = sum;
                for t in kk..d.k {
                    s += *a[r].add(t) * *w[j].add(t);
                }
                if !d.init.is_null() {
                    s += *d.init.add(r * d.ld_init + j);
                }
                if !d.bias.is_null() {
                    s += *d.bias.add(j);
                }
                *d.c.add(r * d.ldc + j) = clamp1(s, d.lo, d.hi);
            }
        }
    }
}
