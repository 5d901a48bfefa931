//! The register-tiled inner kernels, generic over the vector level ([`Lanes`]) and the tile shape:
//! [`tile`] computes an `MR x (NV * LANES)` block of `C` over a range of `k` from unpacked rows of `A`
//! and one packed panel of `B`, with the epilogue (bias, clip) on the last range; [`gemv`] computes
//! dot products of one row with rows of a row-major `[N, K]` matrix (fully connected at batch 1).
//!
//! Both are `#[inline(always)]`: [`crate::levels`] instantiates them inside each level's
//! `#[target_feature]` functions.

use core::array;

use crate::gemm::lanes::Lanes;

/// One call of [`tile`]: the pointers are checked by the driver (`gemm::Gemm::run`) before it calls.
pub(crate) struct TileArgs {
    /// Length of the `k` range.
    pub k: usize,
    /// `A[r, kk]` is `a[r * lda + kk]` for `r < rows`, `kk < k`.
    pub a: *const f32,
    /// Row stride of `A`.
    pub lda: usize,
    /// Rows of the tile that exist (1 to `MR`); the others reuse the last row's data and are not stored.
    pub rows: usize,
    /// The packed panel: `B[kk, j]` is `b[kk * NR + j]` for `j < NR` (`NR = NV * LANES`).
    pub b: *const f32,
    /// `C[r, j]` is `c[r * ldc + j]`; `rows` rows of `NR` values are written.
    pub c: *mut f32,
    /// Row stride of `C`.
    pub ldc: usize,
    /// Start values of the sums (`init[r * ld_init + j]`, `rows x NR` readable), or null for zeros.
    pub init: *const f32,
    /// Row stride of `init`.
    pub ld_init: usize,
    /// Whether this is the last `k` range: then `bias` is added and the result clipped.
    pub last: bool,
    /// `NR` values added to every row at the end, or null.
    pub bias: *const f32,
    /// Lower clip bound (see [`Lanes::clamp`]).
    pub lo: f32,
    /// Upper clip bound.
    pub hi: f32,
}

/// A register-tile kernel, [`tile`] at one level and tile shape: `unsafe` because it runs the level's
/// instructions on raw pointers.
pub(crate) type TileFn = unsafe fn(&TileArgs);

/// `C = init + A * B` over the tile, then on the last range `C = clip(C + bias)`.
///
/// # Safety
///
/// The level `S` runs on this CPU, and every pointer of `t` is valid for the accesses its documentation
/// states (`rows >= 1`).
#[inline(always)]
pub(crate) unsafe fn tile<S: Lanes, const MR: usize, const NV: usize>(t: &TileArgs) {
    let lanes = S::LANES;
    let nr = NV * lanes;
    // SAFETY: the caller's contract: `S` runs here, and each access below stays within the rows, the `k`
    // range and the `NR` columns that `t` documents as valid (missing rows read the last valid one).
    unsafe {
        let a: [*const f32; MR] = array::from_fn(|r| t.a.add(r.min(t.rows - 1) * t.lda));
        let mut acc = [[S::zero(); NV]; MR];
        if !t.init.is_null() {
            for (r, acc_r) in acc.iter_mut().enumerate().take(t.rows) {
                for (v, acc_rv) in acc_r.iter_mut().enumerate() {
                    *acc_rv = S::load(t.init.add(r * t.ld_init + v * lanes));
                }
            }
        }
        let mut b = t.b;
        for kk in 0..t.k {
            let bv: [S::V; NV] = array::from_fn(|v| S::load(b.add(v * lanes)));
            for r in 0..MR {
                let ar = S::broadcast(a[r].add(kk));
                for v in 0..NV {
                    acc[r][v] = S::mul_add(ar, bv[v], acc[r][v]);
                }
            }
            b = b.add(nr);
        }
        if t.last {
            if !t.bias.is_null() {
                let bias: [S::V; NV] = array::from_fn(|v| S::load(t.bias.add(v * lanes)));
                for acc_r in acc.iter_mut() {
                    for (acc_rv, &bias_v) in acc_r.iter_mut().zip(&bias) {
                        *acc_rv = S::add(*acc_rv, bias_v);
                    }
                }
            }
            let (lo, hi) = (S::splat(t.lo), S::splat(t.hi));
            for acc_r in acc.iter_mut() {
                for acc_rv in acc_r.iter_mut() {
                    *acc_rv = S::clamp(*acc_rv, lo, hi);
                }
            }
        }
        for (r, acc_r) in acc.iter().enumerate().take(t.rows) {
            for (v, &acc_rv) in acc_r.iter().enumerate() {
                S::store(t.c.add(r * t.ldc + v * lanes), acc_rv);
            }
        }
    }
}

/// One call of [`gemv`].
pub(crate) struct GemvArgs {
    /// Length of the dot products.
    pub k: usize,
    /// The row: `k` readable values.
    pub x: *const f32,
    /// `W[j, kk]` is `w[j * ldw + kk]` for `j < n`, `kk < k`.
    pub w: *const f32,
    /// Row stride of `W`.
    pub ldw: usize,
    /// Number of outputs.
    pub n: usize,
    /// `n` values added to the sums, or null.
    pub bias: *const f32,
    /// `n` more values added to the sums (a residual), or null.
    pub init: *const f32,
    /// `n` writable outputs.
    pub y: *mut f32,
    /// Lower clip bound.
    pub lo: f32,
    /// Upper clip bound.
    pub hi: f32,
}

/// A dot-product kernel, [`gemv`] at one level.
pub(crate) type GemvFn = unsafe fn(&GemvArgs);

/// `y[j] = clip(dot(x, W[j]) + init[j] + bias[j])` for `j < n`, four rows of `W` at a time (each element of `W`
/// read once). Every output is computed by the same sequence of operations whichever group of four it
/// falls in, so any split of `j` gives the same values.
///
/// # Safety
///
/// The level `S` runs on this CPU, and the pointers of `g` are valid as documented there.
#[inline(always)]
pub(crate) unsafe fn gemv<S: Lanes>(g: &GemvArgs) {
    let mut j = 0;
    // SAFETY: the caller's contract; `dots` reads rows `j..j + R` with `j + R <= n`.
    unsafe {
        while j + 4 <= g.n {
            let d = dots::<S, 4>(g, j);
            finish(g, j, &d);
            j += 4;
        }
        while j < g.n {
            let d = dots::<S, 1>(g, j);
            finish(g, j, &d);
            j += 1;
        }
    }
}

/// The dot products of `x` with rows `j..j + R` of `W`, two vector accumulators per row.
#[inline(always)]
unsafe fn dots<S: Lanes, const R: usize>(g: &GemvArgs, j: usize) -> [f32; R] {
    let lanes = S::LANES;
    // SAFETY: rows `j..j + R` of `W` and the `k` values of `x` are readable (caller of `gemv`).
    unsafe {
        let w: [*const f32; R] = array::from_fn(|i| g.w.add((j + i) * g.ldw));
        let mut acc0 = [S::zero(); R];
        let mut acc1 = [S::zero(); R];
        let mut kk = 0;
        while kk + 2 * lanes <= g.k {
            let x0 = S::load(g.x.add(kk));
            let x1 = S::load(g.x.add(kk + lanes));
            for i in 0..R {
                acc0[i] = S::mul_add(x0, S::load(w[i].add(kk)), acc0[i]);
                acc1[i] = S::mul_add(x1, S::load(w[i].add(kk + lanes)), acc1[i]);
            }
            kk += 2 * lanes;
        }
        if kk + lanes <= g.k {
            let x0 = S::load(g.x.add(kk));
            for i in 0..R {
                acc0[i] = S::mul_add(x0, S::load(w[i].add(kk)), acc0[i]);
            }
            kk += lanes;
        }
        array::from_fn(|i| {
            let mut s = S::sum(S::add(acc0[i], acc1[i]));
            for t in kk..g.k {
                s += *g.x.add(t) * *w[i].add(t);
            }
            s
        })
    }
}

/// Adds the bias, clips and stores the outputs `j..j + R`.
#[inline(always)]
unsafe fn finish<const R: usize>(g: &GemvArgs, j: usize, dots: &[f32; R]) {
    for (i, &d) in dots.iter().enumerate() {
        // SAFETY: `j + i < n`, so `init`, the bias (when present) and the output are in bounds (caller of
        // `gemv`).
        unsafe {
            let mut s = d;
            if !g.init.is_null() {
                s += *g.init.add(j + i);
            }
            if !g.bias.is_null() {
                s += *g.bias.add(j + i);
            }
            *g.y.add(j + i) = crate::gemm::lanes::clamp1(s, g.lo, g.hi);
        }
    }
}
