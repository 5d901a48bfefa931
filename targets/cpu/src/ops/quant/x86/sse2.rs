//! The SSE2 level (every x86-64 CPU): 128-bit `pmaddwd` inner loops in the layouts AVX2 uses, and the
//! scalar output stage.
//!
//! SSE2 has no per-lane variable shifts and no signed 32x32->64 multiply (both SSE4.1 or AVX2), which
//! the vectorized requantization needs, so each output is finished by [`Stage::finish`]; the
//! accumulation, which dominates for all but the smallest layers, is vectorized:
//!
//! - GEMM tiles of 2 rows x 16 channels (8 accumulators of 4 channels).
//! - Matrix-vector products: 4 channels at a time, 16 inputs per step.
//! - Depthwise: 8 channels at a time, two taps per `pmaddwd`.
//!
//! Sign extension is `punpcklbw` of a vector with itself, then an arithmetic shift by 8.

use core::arch::x86_64::*;

use super::{
    dw_padded_channels, gemm_blocks, gemm_pack, gemv_blocks, tail16, widen_with, BLOCK, DW_BLOCK,
};
use crate::ops::quant::{DwPixel, GemvRow, Level, Tile};

/// The SSE2 level (see the module documentation).
pub(crate) struct Sse2;

/// Rows per GEMM tile.
const MR: usize = 2;

impl Level for Sse2 {
    const GEMM_NAME: &'static str = "sse2-int8-gemm";
    const GROUPED_NAME: &'static str = "sse2-int8-grouped";
    shared_level_items!();

    fn gemm_pack(w: &[i8], n: usize, k: usize, out: &mut [i16]) {
        gemm_pack(w, n, k, out)
    }
    fn gemm(t: Tile<'_>) {
        // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it.
        unsafe { gemm(t) }
    }
    fn gemv(g: GemvRow<'_>) {
        // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it.
        unsafe { gemv(g) }
    }
    fn depthwise(px: DwPixel<'_>) {
        // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it.
        unsafe { depthwise(px) }
    }
}

/// Sign-extends the low 8 bytes of `v` to int16.
#[target_feature(enable = "sse2")]
#[inline]
fn widen_lo(v: __m128i) -> __m128i {
    _mm_srai_epi16::<8>(_mm_unpacklo_epi8(v, v))
}

/// Sign-extends the high 8 bytes of `v` to int16.
#[target_feature(enable = "sse2")]
#[inline]
fn widen_hi(v: __m128i) -> __m128i {
    _mm_srai_epi16::<8>(_mm_unpackhi_epi8(v, v))
}

/// `dst[i] = src[i] - zero_point` as int16, zero past `src` (`dst` at least as long).
#[target_feature(enable = "sse2")]
fn widen(src: &[i8], zero_point: i8, dst: &mut [i16]) {
    let zp = _mm_set1_epi16(zero_point.into());
    widen_with(src, zero_point, dst, |s, d| {
        // SAFETY: `widen_with` hands over 16 bytes `s` and 16 int16 (32 bytes) `d`.
        unsafe {
            let v = _mm_loadu_si128(s.as_ptr().cast());
            _mm_storeu_si128(d.as_mut_ptr().cast(), _mm_sub_epi16(widen_lo(v), zp));
            _mm_storeu_si128(d[8..].as_mut_ptr().cast(), _mm_sub_epi16(widen_hi(v), zp));
        }
    });
}

/// One GEMM tile: the rows widened into `t.tmp`, then every block of 16 channels.
#[target_feature(enable = "sse2")]
fn gemm(t: Tile<'_>) {
    let block = |a, w, kp, mr| {
        let mut acc = [[0i32; BLOCK]; MR];
        // SAFETY: `a` holds `mr` rows of `kp` and `w` one block of `kp / 2` pairs of 16 channels x 2
        // (`gemm_blocks` checked); `tile::<R>` reads no further for `R == mr`.
        unsafe {
            if mr == 1 {
                acc[0] = tile::<1>(a, w, kp)[0];
            } else {
                acc = tile::<2>(a, w, kp);
            }
        }
        acc
    };
    gemm_blocks(
        t,
        |x, zp, xs| widen(x, zp, xs),
        block,
        |acc, stage, out| stage.finish_all(&acc, out),
    );
}

/// `R` rows x 16 channels of sums `sum_k a[r][k] * w[k][c]`.
///
/// # Safety
/// `a` must hold `R` rows of `kp` int16 and `w` `kp / 2` pairs of 16 channels x 2 int16.
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn tile<const R: usize>(a: *const i16, w: *const i16, kp: usize) -> [[i32; BLOCK]; R] {
    let mut acc = [[_mm_setzero_si128(); 4]; R];
    for j in 0..kp / 2 {
        // SAFETY: pair `j < kp / 2` of the block: 32 int16 at `32 * j` (the caller's contract).
        let wv: [__m128i; 4] =
            core::array::from_fn(|q| unsafe { _mm_loadu_si128(w.add(32 * j + 8 * q).cast()) });
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: elements `2j, 2j + 1` of row `r < R`, inside the caller's `R` rows of `kp`.
            let pair = unsafe { a.add(r * kp + 2 * j).cast::<i32>().read_unaligned() };
            let x = _mm_set1_epi32(pair);
            for (acc, &wv) in acc.iter_mut().zip(&wv) {
                *acc = _mm_add_epi32(*acc, _mm_madd_epi16(x, wv));
            }
        }
    }
    let mut sums = [[0i32; BLOCK]; R];
    for (sums, acc) in sums.iter_mut().zip(&acc) {
        for (q, v) in acc.iter().enumerate() {
            // SAFETY: 4 int32 at `4 * q < 16` of `sums`.
            unsafe { _mm_storeu_si128(sums[4 * q..].as_mut_ptr().cast(), *v) };
        }
    }
    sums
}

/// A fully connected row: 4 output channels at a time against `x` widened into `tmp`.
#[target_feature(enable = "sse2")]
fn gemv(g: GemvRow<'_>) {
    let k = g.k;
    let full = k / 16 * 16;
    gemv_blocks::<4>(
        g,
        |x, zp, xs| widen(x, zp, xs),
        |xs, rows, stage, out| {
            let mut acc = [_mm_setzero_si128(); 4];
            let mut step = |kk: usize, wv: [__m128i; 4]| {
                // SAFETY: `kk + 16 <= xs.len()` (`k` rounded up to 16) for every step below.
                let (x0, x1) = unsafe {
                    (
                        _mm_loadu_si128(xs.as_ptr().add(kk).cast()),
                        _mm_loadu_si128(xs.as_ptr().add(kk + 8).cast()),
                    )
                };
                for (acc, wv) in acc.iter_mut().zip(wv) {
                    let lo = _mm_madd_epi16(widen_lo(wv), x0);
                    *acc = _mm_add_epi32(*acc, _mm_add_epi32(lo, _mm_madd_epi16(widen_hi(wv), x1)));
                }
            };
            for kk in (0..full).step_by(16) {
                // SAFETY: `kk + 16 <= full <= k`: inside every row.
                step(
                    kk,
                    rows.map(|r| unsafe { _mm_loadu_si128(r.as_ptr().add(kk).cast()) }),
                );
            }
            if full < k {
                step(
                    full,
                    rows.map(|r| {
                        let tail = tail16(r, full);
                        // SAFETY: `tail` is 16 bytes.
                        unsafe { _mm_loadu_si128(tail.as_ptr().cast()) }
                    }),
                );
            }
            stage.finish_all(&sum4(acc), out);
        },
    );
}

/// The horizontal sums of 4 vectors, in order.
#[target_feature(enable = "sse2")]
#[inline]
fn sum4(a: [__m128i; 4]) -> [i32; 4] {
    // Transpose-and-add: pairs of lanes, then pairs of pairs.
    let t0 = _mm_add_epi32(
        _mm_unpacklo_epi32(a[0], a[1]),
        _mm_unpackhi_epi32(a[0], a[1]),
    );
    let t1 = _mm_add_epi32(
        _mm_unpacklo_epi32(a[2], a[3]),
        _mm_unpackhi_epi32(a[2], a[3]),
    );
    let s = _mm_add_epi32(_mm_unpacklo_epi64(t0, t1), _mm_unpackhi_epi64(t0, t1));
    let mut out = [0i32; 4];
    // SAFETY: `out` is 4 int32.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), s) };
    out
}

/// One depthwise output pixel: 8 channels at a time, two taps per `pmaddwd`.
#[target_feature(enable = "sse2")]
fn depthwise(px: DwPixel<'_>) {
    let Some(cpad) = dw_padded_channels(&px) else {
        return;
    };
    let c = px.c;
    let zp = _mm_set1_epi16(px.x_zero_point.into());
    let w = px.packed.as_ptr();
    let mut c0 = 0;
    while c0 < c {
        let (mut lo, mut hi) = (_mm_setzero_si128(), _mm_setzero_si128());
        let whole = c0 + DW_BLOCK <= c;
        for (j, taps) in px.taps.chunks_exact(2).enumerate() {
            let load = |tap: &[i8]| {
                if whole {
                    // SAFETY: every tap holds `c >= c0 + 8` channels (checked above).
                    unsafe { _mm_loadl_epi64(tap.as_ptr().add(c0).cast()) }
                } else {
                    let mut b = [px.x_zero_point; 8];
                    b[..c - c0].copy_from_slice(&tap[c0..c]);
                    // SAFETY: `b` is 8 bytes.
                    unsafe { _mm_loadl_epi64(b.as_ptr().cast()) }
                }
            };
            let v = _mm_unpacklo_epi8(load(taps[0]), load(taps[1]));
            // SAFETY: pair `j < pairs`, channels `c0..c0 + 8 <= cpad`: 16 int16 inside the packed
            // weights (checked above).
            let (w0, w1) = unsafe {
                let at = w.add((j * cpad + c0) * 2);
                (
                    _mm_loadu_si128(at.cast()),
                    _mm_loadu_si128(at.add(8).cast()),
                )
            };
            lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_sub_epi16(widen_lo(v), zp), w0));
            hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_sub_epi16(widen_hi(v), zp), w1));
        }
        let mut acc = [0i32; 8];
        // SAFETY: `acc` is 8 int32.
        unsafe {
            _mm_storeu_si128(acc.as_mut_ptr().cast(), lo);
            _mm_storeu_si128(acc[4..].as_mut_ptr().cast(), hi);
        }
        let end = c.min(c0 + DW_BLOCK);
        px.stage.skip(c0).finish_all(&acc, &mut px.out[c0..end]);
        c0 += DW_BLOCK;
    }
}
