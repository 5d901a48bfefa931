//! The AVX2 level: 256-bit `vpmaddwd` inner loops and a vectorized, bit-exact output stage.
//!
//! - GEMM tiles of 4 rows x 16 channels: per input pair, the rows' `(x[k], x[k+1])` (widened, zero
//!   point removed) broadcast to every 32-bit lane, times the packed weights of 8 channels, summed
//!   into 8 int32 lanes (8 accumulators, 2 weight vectors, no horizontal sums).
//! - Matrix-vector products (fully connected with few rows) over the weights as given: 8 channels at a
//!   time, 16 inputs per step (weights sign-extended with `vpmovsxbw`), one horizontal sum per 8
//!   channels at the end.
//! - Depthwise: 16 channels at a time (then 8), two taps per `vpmaddwd` (their inputs interleaved
//!   byte-wise, then sign-extended).
//! - Weight packing for the GEMM, 16 channels x 16 inputs at a time (widen, then two 8x8 transposes
//!   of input pairs), since it runs on every call.
//!
//! Every function here runs AVX2 instructions: they are reached only through [`Avx2`], which only the
//! AVX2 kernel table uses, and `Isa` hands that table out only on CPUs with AVX2 and FMA.

use core::arch::x86_64::*;

use ember_core::ops::quant::add::QuantAddParams;
use ember_core::ops::quant::mul::QuantMulParams;
use ember_core::ops::quant::requant::RequantRounding;

use super::{
    dw_padded_channels, gemm_blocks, gemv_blocks, pack_columns, tail16, widen_with, BLOCK, DW_BLOCK,
};
use crate::ops::quant::{DwPixel, GemvRow, Level, Stage, Tile};

/// The AVX2 level (see the module documentation).
pub(crate) struct Avx2;

/// Rows per GEMM tile.
pub(super) const MR: usize = 4;

impl Level for Avx2 {
    const GEMM_NAME: &'static str = "avx2-int8-gemm";
    const GROUPED_NAME: &'static str = "avx2-int8-grouped";
    shared_level_items!();

    fn gemm_pack(w: &[i8], n: usize, k: usize, out: &mut [i16]) {
        // SAFETY: as for `gemm`: only the AVX2 table, on CPUs with AVX2, reaches this.
        unsafe { gemm_pack(w, n, k, out) }
    }
    fn gemm(t: Tile<'_>) {
        // SAFETY: this level's kernels run only from the AVX2 table, which `Isa` hands out only on
        // CPUs with AVX2.
        unsafe { gemm_rounding::<Madd>(t) }
    }
    fn gemv(g: GemvRow<'_>) {
        // SAFETY: as for `gemm`: only the AVX2 table, on CPUs with AVX2, reaches this.
        unsafe {
            match g.stage.rounding {
                RequantRounding::Double => gemv::<false>(g),
                RequantRounding::Single => gemv::<true>(g),
            }
        }
    }
    fn depthwise(px: DwPixel<'_>) {
        // SAFETY: as for `gemm`: only the AVX2 table, on CPUs with AVX2, reaches this.
        unsafe {
            match px.stage.rounding {
                RequantRounding::Double => depthwise::<false>(px),
                RequantRounding::Single => depthwise::<true>(px),
            }
        }
    }
}

/// The x86 GEMM packing (see `super::gemm_pack`), 16 inputs of 16 channels at a time: each channel's
/// 16 weights widened to 8 pairs, then the 16 x 8 pairs transposed so that each pair's 16 channels are
/// contiguous.
#[target_feature(enable = "avx2")]
fn gemm_pack(w: &[i8], n: usize, k: usize, out: &mut [i16]) {
    let kp = k.next_multiple_of(2);
    out.fill(0);
    let full = k / 16 * 16;
    if kp == 0 {
        return;
    }
    if w.len() < n * k || out.len() < n.div_ceil(BLOCK) * BLOCK * kp {
        debug_assert!(false, "GEMM packing with inconsistent sizes");
        return;
    }
    for (b, block) in out.chunks_exact_mut(BLOCK * kp).enumerate() {
        for kk in (0..full).step_by(16) {
            let rows: [__m256i; BLOCK] = core::array::from_fn(|c| {
                let ch = b * BLOCK + c;
                if ch < n {
                    // SAFETY: `kk + 16 <= k`: inside row `ch < n` of `w` (checked above).
                    unsafe {
                        _mm256_cvtepi8_epi16(_mm_loadu_si128(w.as_ptr().add(ch * k + kk).cast()))
                    }
                } else {
                    _mm256_setzero_si256()
                }
            });
            let (lo, hi) = rows.split_at(8);
            for (half, rows) in [lo, hi].into_iter().enumerate() {
                let pairs = transpose8(rows.try_into().unwrap_or([_mm256_setzero_si256(); 8]));
                for (j, v) in pairs.into_iter().enumerate() {
                    let at = ((kk / 2 + j) * BLOCK + 8 * half) * 2;
                    if let Some(dst) = block.get_mut(at..at + 16) {
                        // SAFETY: `dst` is 16 int16 (32 bytes).
                        unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), v) };
                    }
                }
            }
        }
    }
    pack_columns(w, n, k, full, out);
}

/// Transposes 8 vectors of 8 int32: lane `i` of output `j` is lane `j` of input `i`.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
    let t: [__m256i; 8] = core::array::from_fn(|i| {
        let (a, b) = (r[i / 2 * 2], r[i / 2 * 2 + 1]);
        if i % 2 == 0 {
            _mm256_unpacklo_epi32(a, b)
        } else {
            _mm256_unpackhi_epi32(a, b)
        }
    });
    // u[0..4]: lanes 0|4, 1|5, 2|6, 3|7 of rows 0..4; u[4..8]: the same of rows 4..8.
    let u: [__m256i; 8] = core::array::from_fn(|i| {
        let base = i / 4 * 4;
        let (a, b) = (t[base + (i % 4) / 2], t[base + 2 + (i % 4) / 2]);
        if i % 2 == 0 {
            _mm256_unpacklo_epi64(a, b)
        } else {
            _mm256_unpackhi_epi64(a, b)
        }
    });
    core::array::from_fn(|j| {
        let (a, b) = (u[j % 4], u[4 + j % 4]);
        if j < 4 {
            _mm256_permute2x128_si256::<0x20>(a, b)
        } else {
            _mm256_permute2x128_si256::<0x31>(a, b)
        }
    })
}

/// The inner product of a GEMM tile: `R` rows of widened inputs times one packed block of 16
/// channels, as 2 x 8 int32 lanes per row (see [`tile`]).
pub(super) trait GemmTile {
    /// `acc[r][h]` lane `i` is `sum_k a[r][k] * w[k][8 * h + i]`.
    ///
    /// # Safety
    /// `a` must hold `R` rows of `kp` int16 and `w` `kp / 2` pairs of 16 channels x 2 int16, and the
    /// CPU must have the implementation's instructions.
    unsafe fn tile<const R: usize>(a: *const i16, w: *const i16, kp: usize) -> [[__m256i; 2]; R];
}

/// AVX2's tile: `vpmaddwd` then `vpaddd`, 8 channels per instruction.
pub(super) struct Madd;

impl GemmTile for Madd {
    #[inline(always)]
    unsafe fn tile<const R: usize>(a: *const i16, w: *const i16, kp: usize) -> [[__m256i; 2]; R] {
        // SAFETY: the caller's contract is `tile`'s.
        unsafe { tile::<R>(a, w, kp) }
    }
}

/// One GEMM tile: the rows widened into `t.tmp`, then every block of 16 channels through `T`'s inner
/// product (`SINGLE`: the stage rounds once).
///
/// # Safety
/// The CPU has AVX2 and the instructions `T` uses.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn gemm<T: GemmTile, const SINGLE: bool>(t: Tile<'_>) {
    let block = |a, w, kp, mr| {
        // SAFETY: `a` holds `mr` rows of `kp` and `w` one block of `kp / 2` pairs of 16 channels x 2
        // (`gemm_blocks` checked); `tile::<R>` reads no further for `R == mr`; the CPU has `T`'s
        // instructions (this function's contract).
        unsafe {
            match mr {
                1 => spill(T::tile::<1>(a, w, kp)),
                2 => spill(T::tile::<2>(a, w, kp)),
                3 => spill(T::tile::<3>(a, w, kp)),
                _ => T::tile::<4>(a, w, kp),
            }
        }
    };
    gemm_blocks(
        t,
        |x, zp, xs| widen(x, zp, xs),
        block,
        |[lo, hi], stage, out| finish16::<SINGLE>(lo, hi, stage, out),
    );
}

/// [`gemm`] in the rounding mode of the tile's stage.
///
/// # Safety
/// As [`gemm`].
#[inline(always)]
pub(super) unsafe fn gemm_rounding<T: GemmTile>(t: Tile<'_>) {
    // SAFETY: the caller's contract is `gemm`'s.
    unsafe {
        match t.stage.rounding {
            RequantRounding::Double => gemm::<T, false>(t),
            RequantRounding::Single => gemm::<T, true>(t),
        }
    }
}

/// `R` rows' accumulators widened to the tile's 4 (the extra rows unused).
#[inline(always)]
fn spill<const R: usize>(acc: [[__m256i; 2]; R]) -> [[__m256i; 2]; MR] {
    let mut all = [[acc[0][0]; 2]; MR];
    all[..R].copy_from_slice(&acc);
    all
}

/// `R` rows x 16 channels: `acc[r][h]` lane `i` is `sum_k a[r][k] * w[k][8 * h + i]`.
///
/// # Safety
/// `a` must hold `R` rows of `kp` int16 and `w` `kp / 2` pairs of 16 channels x 2 int16.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn tile<const R: usize>(a: *const i16, w: *const i16, kp: usize) -> [[__m256i; 2]; R] {
    let mut acc = [[_mm256_setzero_si256(); 2]; R];
    for j in 0..kp / 2 {
        // SAFETY: pair `j < kp / 2` of the block: 32 int16 at `32 * j` (the caller's contract).
        let (w0, w1) = unsafe {
            (
                _mm256_loadu_si256(w.add(32 * j).cast()),
                _mm256_loadu_si256(w.add(32 * j + 16).cast()),
            )
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: elements `2j, 2j + 1` of row `r < R`, inside the caller's `R` rows of `kp`.
            let pair = unsafe { a.add(r * kp + 2 * j).cast::<i32>().read_unaligned() };
            let x = _mm256_set1_epi32(pair);
            acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(x, w0));
            acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(x, w1));
        }
    }
    acc
}

/// `dst[i] = src[i] - zero_point` as int16, zero past `src` (`dst` at least as long).
#[target_feature(enable = "avx2")]
fn widen(src: &[i8], zero_point: i8, dst: &mut [i16]) {
    let zp = _mm256_set1_epi16(zero_point.into());
    widen_with(src, zero_point, dst, |s, d| {
        // SAFETY: `widen_with` hands over 16 bytes `s` and 16 int16 (32 bytes) `d`.
        unsafe {
            let v = _mm256_cvtepi8_epi16(_mm_loadu_si128(s.as_ptr().cast()));
            _mm256_storeu_si256(d.as_mut_ptr().cast(), _mm256_sub_epi16(v, zp));
        }
    });
}

/// A fully connected row: 8 output channels at a time against `x` widened into `tmp`.
#[target_feature(enable = "avx2")]
fn gemv<const SINGLE: bool>(g: GemvRow<'_>) {
    let k = g.k;
    let full = k / 16 * 16;
    gemv_blocks::<8>(
        g,
        |x, zp, xs| widen(x, zp, xs),
        |xs, rows, stage, out| {
            let mut acc = [_mm256_setzero_si256(); 8];
            for kk in (0..full).step_by(16) {
                // SAFETY: `kk + 16 <= full <= k`: inside `xs` (`k` rounded up to 16) and every row.
                unsafe {
                    let xv = _mm256_loadu_si256(xs.as_ptr().add(kk).cast());
                    for (acc, row) in acc.iter_mut().zip(&rows) {
                        let wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(row.as_ptr().add(kk).cast()));
                        *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(wv, xv));
                    }
                }
            }
            if full < k {
                // SAFETY: `xs` is `k` rounded up to 16 long, zero past `k`.
                let xv = unsafe { _mm256_loadu_si256(xs.as_ptr().add(full).cast()) };
                for (acc, row) in acc.iter_mut().zip(&rows) {
                    let tail = tail16(row, full);
                    // SAFETY: `tail` is 16 bytes.
                    let wv = unsafe { _mm256_cvtepi8_epi16(_mm_loadu_si128(tail.as_ptr().cast())) };
                    *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(wv, xv));
                }
            }
            finish8::<SINGLE>(sum8(acc), stage, out);
        },
    );
}

/// The horizontal sums of 8 vectors, in order, as one vector.
#[target_feature(enable = "avx2")]
#[inline]
fn sum8(a: [__m256i; 8]) -> __m256i {
    let t0 = _mm256_hadd_epi32(a[0], a[1]);
    let t1 = _mm256_hadd_epi32(a[2], a[3]);
    let t2 = _mm256_hadd_epi32(a[4], a[5]);
    let t3 = _mm256_hadd_epi32(a[6], a[7]);
    let (u0, u1) = (_mm256_hadd_epi32(t0, t1), _mm256_hadd_epi32(t2, t3));
    _mm256_add_epi32(
        _mm256_permute2x128_si256::<0x20>(u0, u1),
        _mm256_permute2x128_si256::<0x31>(u0, u1),
    )
}

/// One depthwise output pixel: 16 channels at a time (then 8), two taps per `vpmaddwd`.
#[target_feature(enable = "avx2")]
fn depthwise<const SINGLE: bool>(px: DwPixel<'_>) {
    let Some(cpad) = dw_padded_channels(&px) else {
        return;
    };
    let c = px.c;
    let zp = _mm256_set1_epi16(px.x_zero_point.into());
    let w = px.packed.as_ptr();
    let mut c0 = 0;
    while c0 + 2 * DW_BLOCK <= c {
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for (j, taps) in px.taps.chunks_exact(2).enumerate() {
            // SAFETY: every tap holds `c >= c0 + 16` channels, and the packed weights hold pair `j`'s
            // channels `c0..c0 + 16 <= cpad` (both checked above).
            let (a, b, w0, w1) = unsafe {
                let at = w.add((j * cpad + c0) * 2);
                (
                    _mm_loadu_si128(taps[0].as_ptr().add(c0).cast()),
                    _mm_loadu_si128(taps[1].as_ptr().add(c0).cast()),
                    _mm256_loadu_si256(at.cast()),
                    _mm256_loadu_si256(at.add(16).cast()),
                )
            };
            let x0 = _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)), zp);
            let x1 = _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b)), zp);
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(x0, w0));
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(x1, w1));
        }
        finish16::<SINGLE>(
            lo,
            hi,
            px.stage.skip(c0),
            &mut px.out[c0..c0 + 2 * DW_BLOCK],
        );
        c0 += 2 * DW_BLOCK;
    }
    while c0 < c {
        let mut acc = _mm256_setzero_si256();
        let whole = c0 + DW_BLOCK <= c;
        for (j, taps) in px.taps.chunks_exact(2).enumerate() {
            let (a, b) = if whole {
                // SAFETY: every tap holds `c >= c0 + 8` channels (checked above).
                unsafe {
                    (
                        _mm_loadl_epi64(taps[0].as_ptr().add(c0).cast()),
                        _mm_loadl_epi64(taps[1].as_ptr().add(c0).cast()),
                    )
                }
            } else {
                (
                    load_part(&taps[0][c0..c], px.x_zero_point),
                    load_part(&taps[1][c0..c], px.x_zero_point),
                )
            };
            let x = _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)), zp);
            // SAFETY: pair `j < pairs`, channels `c0..c0 + 8 <= cpad`: 16 int16 inside the packed
            // weights (checked above).
            let wv = unsafe { _mm256_loadu_si256(w.add((j * cpad + c0) * 2).cast()) };
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, wv));
        }
        let end = c.min(c0 + DW_BLOCK);
        finish8::<SINGLE>(acc, px.stage.skip(c0), &mut px.out[c0..end]);
        c0 += DW_BLOCK;
    }
}

/// Up to 8 int8 into the low half of a vector, the rest `fill`.
#[target_feature(enable = "avx2")]
#[inline]
fn load_part(src: &[i8], fill: i8) -> __m128i {
    let mut b = [fill; 8];
    let n = src.len().min(8);
    b[..n].copy_from_slice(&src[..n]);
    // SAFETY: `b` is 8 bytes.
    unsafe { _mm_loadl_epi64(b.as_ptr().cast()) }
}

/// Finishes 16 channels' accumulators (`lo`: channels 0..8, `hi`: 8..16) into `out` (up to 16).
#[target_feature(enable = "avx2")]
#[inline]
fn finish16<const SINGLE: bool>(lo: __m256i, hi: __m256i, stage: Stage<'_>, out: &mut [i8]) {
    match lanes::<16>(&stage) {
        Some((b, m, s)) if stage.simd => {
            // SAFETY: `b`, `m`, `s` are 16 int32 each.
            let (v0, v1) = unsafe {
                (
                    requant8::<SINGLE>(lo, (b, m, s), 0, &stage),
                    requant8::<SINGLE>(hi, (b, m, s), 8, &stage),
                )
            };
            let w = _mm256_permute4x64_epi64::<0xD8>(_mm256_packs_epi32(v0, v1));
            let bytes =
                _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w));
            store(bytes, out);
        }
        _ => {
            let mut acc = [0i32; 16];
            acc[..8].copy_from_slice(&lanes_i32(lo));
            acc[8..].copy_from_slice(&lanes_i32(hi));
            stage.finish_all(&acc, out);
        }
    }
}

/// Finishes 8 channels' accumulators into `out` (up to 8).
#[target_feature(enable = "avx2")]
#[inline]
fn finish8<const SINGLE: bool>(acc: __m256i, stage: Stage<'_>, out: &mut [i8]) {
    match lanes::<8>(&stage) {
        Some((b, m, s)) if stage.simd => {
            // SAFETY: `b`, `m`, `s` are 8 int32 each.
            let v = unsafe { requant8::<SINGLE>(acc, (b, m, s), 0, &stage) };
            let w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
            store(_mm_packs_epi16(w, w), out);
        }
        _ => stage.finish_all(&lanes_i32(acc), out),
    }
}

/// The 8 int32 lanes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
fn lanes_i32(v: __m256i) -> [i32; 8] {
    let mut a = [0i32; 8];
    // SAFETY: `a` is 8 int32 (32 bytes).
    unsafe { _mm256_storeu_si256(a.as_mut_ptr().cast(), v) };
    a
}

/// The first `N` entries of the stage's three arrays, if it has them.
#[allow(clippy::type_complexity)]
fn lanes<'a, const N: usize>(s: &Stage<'a>) -> Option<(&'a [i32; N], &'a [i32; N], &'a [i32; N])> {
    Some((
        s.bias.first_chunk()?,
        s.mult.first_chunk()?,
        s.shift.first_chunk()?,
    ))
}

/// [`requant`] of 8 channels' accumulators with their biases, multipliers and shifts: lanes
/// `at..at + 8` of the stage's arrays `(b, m, s)`.
///
/// # Safety
/// `b`, `m` and `s` must each hold `at + 8` int32.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn requant8<const SINGLE: bool>(
    acc: __m256i,
    (b, m, s): (&[i32], &[i32], &[i32]),
    at: usize,
    stage: &Stage<'_>,
) -> __m256i {
    // SAFETY: the caller's contract: 8 int32 at `at` in each array.
    unsafe {
        let (b, m, s) = (b.as_ptr().add(at), m.as_ptr().add(at), s.as_ptr().add(at));
        requant::<SINGLE>(acc, load8(b), load8(m), load8(s), stage)
    }
}

/// Eight int32 from `p`.
///
/// # Safety
/// `p` must point to 8 readable int32.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load8(p: *const i32) -> __m256i {
    // SAFETY: the caller's contract.
    unsafe { _mm256_loadu_si256(p.cast()) }
}

/// The first `out.len()` (at most 16) bytes of `v` into `out`.
#[target_feature(enable = "avx2")]
#[inline]
fn store(v: __m128i, out: &mut [i8]) {
    if let Some(out) = out.first_chunk_mut::<16>() {
        // SAFETY: `out` is 16 bytes.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) };
    } else {
        let mut all = [0i8; 16];
        // SAFETY: `all` is 16 bytes.
        unsafe { _mm_storeu_si128(all.as_mut_ptr().cast(), v) };
        let n = out.len().min(16);
        out[..n].copy_from_slice(&all[..n]);
    }
}

/// The output stage of 8 channels (`Stage::finish`, vectorized): `acc + bias` scaled by `mult` and
/// `shift` (rounding once when `SINGLE`, as the stage's mode says, else twice), plus the output zero point, clamped. Exact for multipliers
/// `>= 0` and shifts in `-31..=30` (the stage's `simd`). Lanes come out as int32 within int8.
#[target_feature(enable = "avx2")]
#[inline]
fn requant<const SINGLE: bool>(
    acc: __m256i,
    bias: __m256i,
    mult: __m256i,
    shift: __m256i,
    stage: &Stage<'_>,
) -> __m256i {
    let x = _mm256_add_epi32(acc, bias);
    let scaled = if SINGLE {
        scale_single(x, mult, shift)
    } else {
        scale_double(x, mult, shift)
    };
    // `clamp(scaled + zp (saturating), lo, hi)`: with `zp`, `lo`, `hi` in int8, clamping `scaled` to
    // `-256..=256` first changes nothing (both ends then clamp to the same bound) and the add cannot
    // overflow.
    let bound = _mm256_set1_epi32(256);
    let v = _mm256_min_epi32(
        _mm256_max_epi32(scaled, _mm256_sub_epi32(_mm256_setzero_si256(), bound)),
        bound,
    );
    let v = _mm256_add_epi32(v, _mm256_set1_epi32(stage.y_zero_point.into()));
    let v = _mm256_max_epi32(v, _mm256_set1_epi32(stage.act_min.into()));
    _mm256_min_epi32(v, _mm256_set1_epi32(stage.act_max.into()))
}

/// `multiply_by_quantized_multiplier(x, mult, shift)`: a left shift by `max(shift, 0)` (wrapping),
/// the rounding doubling high multiply (`(x * mult + 2^30) >> 31`, which cannot saturate with
/// `mult >= 0`), then the rounding right shift by `max(-shift, 0)` with ties away from zero.
#[target_feature(enable = "avx2")]
#[inline]
fn scale_double(x: __m256i, mult: __m256i, shift: __m256i) -> __m256i {
    let zero = _mm256_setzero_si256();
    let left = _mm256_max_epi32(shift, zero);
    let right = _mm256_sub_epi32(left, shift);
    let x = _mm256_sllv_epi32(x, left);
    // 64-bit products of the even lanes, then of the odd lanes; bits 31..62 of `p + 2^30` are the
    // result (it fits in int32), gathered back into the lanes.
    let nudge = _mm256_set1_epi64x(1 << 30);
    let even = _mm256_add_epi64(_mm256_mul_epi32(x, mult), nudge);
    let odd = _mm256_mul_epi32(_mm256_srli_epi64::<32>(x), _mm256_srli_epi64::<32>(mult));
    let odd = _mm256_add_epi64(odd, nudge);
    let high = _mm256_blend_epi32::<0b1010_1010>(
        _mm256_srli_epi64::<31>(even),
        _mm256_slli_epi64::<1>(odd),
    );
    // Rounding divide by 2^right: `(h >> right) + (remainder > (mask >> 1) + (h < 0))`.
    let mask = _mm256_sub_epi32(
        _mm256_sllv_epi32(_mm256_set1_epi32(1), right),
        _mm256_set1_epi32(1),
    );
    let remainder = _mm256_and_si256(high, mask);
    let threshold = _mm256_add_epi32(_mm256_srli_epi32::<1>(mask), _mm256_srli_epi32::<31>(high));
    let quotient = _mm256_srav_epi32(high, right);
    _mm256_sub_epi32(quotient, _mm256_cmpgt_epi32(remainder, threshold))
}

/// `multiply_by_quantized_multiplier_single(x, mult, shift)`: `(x * mult + 2^(t - 1)) >> t` in 64
/// bits with `t = 31 - shift` (`1..=62`), saturated to int32.
#[target_feature(enable = "avx2")]
#[inline]
fn scale_single(x: __m256i, mult: __m256i, shift: __m256i) -> __m256i {
    let total = _mm256_sub_epi32(_mm256_set1_epi32(31), shift);
    let low32 = _mm256_set1_epi64x(0xFFFF_FFFF);
    let t_even = _mm256_and_si256(total, low32);
    let t_odd = _mm256_srli_epi64::<32>(total);
    let even = _mm256_mul_epi32(x, mult);
    let odd = _mm256_mul_epi32(_mm256_srli_epi64::<32>(x), _mm256_srli_epi64::<32>(mult));
    let even = shift_round_saturate(even, t_even);
    let odd = shift_round_saturate(odd, t_odd);
    _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd))
}

/// `clamp((p + 2^(t - 1)) >> t, i32::MIN, i32::MAX)` per 64-bit lane (`t` in `1..=62`, `|p| < 2^62`),
/// the result in the lane's low 32 bits.
#[target_feature(enable = "avx2")]
#[inline]
fn shift_round_saturate(p: __m256i, t: __m256i) -> __m256i {
    let one = _mm256_set1_epi64x(1);
    let p = _mm256_add_epi64(p, _mm256_sllv_epi64(one, _mm256_sub_epi64(t, one)));
    // Arithmetic shift from a logical one: flip negative values, shift, flip back.
    let sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), p);
    let q = _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(p, sign), t), sign);
    let max = _mm256_set1_epi64x(i32::MAX.into());
    let min = _mm256_set1_epi64x(i32::MIN.into());
    let q = _mm256_blendv_epi8(q, max, _mm256_cmpgt_epi64(q, max));
    _mm256_blendv_epi8(q, min, _mm256_cmpgt_epi64(min, q))
}

/// int8 Add of equal-shaped operands (`QuantAdd` with no broadcasting), 8 elements at a time: each
/// operand widened to int32, its zero point removed, shifted left by `left_shift` and scaled by its
/// multiplier; the sum scaled by the output multiplier, offset and clamped, as the reference's `add`
/// does per element (the same `scale_double`/`scale_single` as the output stage, exact for the
/// validated parameters: multipliers `>= 0`, shifts in `-31..=0`, `left_shift` at most 22). The last
/// `len % 8` elements are left to the caller: returns how many it wrote.
///
/// # Safety
/// The CPU must have AVX2; `a`, `b` and `y` must be equally long.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn add_flat<const SINGLE: bool>(
    p: &QuantAddParams,
    a: &[i8],
    b: &[i8],
    y: &mut [i8],
) -> usize {
    let scale = |x, m: i32, s: i32| {
        let (m, s) = (_mm256_set1_epi32(m), _mm256_set1_epi32(s));
        if SINGLE {
            scale_single(x, m, s)
        } else {
            scale_double(x, m, s)
        }
    };
    let left = _mm256_set1_epi32(p.left_shift);
    each8(
        (a, b, y),
        (p.a_zero_point, p.b_zero_point),
        (p.y_zero_point, p.act_min, p.act_max),
        |u, v| {
            let ua = scale(_mm256_sllv_epi32(u, left), p.a_multiplier, p.a_shift);
            let ub = scale(_mm256_sllv_epi32(v, left), p.b_multiplier, p.b_shift);
            scale(_mm256_add_epi32(ua, ub), p.y_multiplier, p.y_shift)
        },
    )
}

/// int8 Mul of equal-shaped operands (`QuantMul` with no broadcasting), 8 elements at a time: each
/// operand widened to int32 and its zero point removed, the product (at most 255^2) scaled by the
/// multiplier, offset and clamped, as the reference's `mul` does per element (the output stage's
/// `scale_double`/`scale_single`, exact for the validated parameters: multiplier `>= 0`, shift in
/// `-31..=30`). The last `len % 8` elements are left to the caller: returns how many it wrote.
///
/// # Safety
/// The CPU must have AVX2; `a`, `b` and `y` must be equally long.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul_flat<const SINGLE: bool>(
    p: &QuantMulParams,
    a: &[i8],
    b: &[i8],
    y: &mut [i8],
) -> usize {
    let (mult, shift) = (_mm256_set1_epi32(p.multiplier), _mm256_set1_epi32(p.shift));
    each8(
        (a, b, y),
        (p.a_zero_point, p.b_zero_point),
        (p.y_zero_point, p.act_min, p.act_max),
        |u, v| {
            let product = _mm256_mullo_epi32(u, v);
            if SINGLE {
                scale_single(product, mult, shift)
            } else {
                scale_double(product, mult, shift)
            }
        },
    )
}

/// The loop of the int8 binary ops: `lanes` on each 8 elements of `a` and `b` (widened to int32,
/// their zero points `(za, zb)` removed), its int32 results stored into `y` by [`store8`] with `out`.
/// The last `len % 8` elements are left to the caller: returns how many it wrote.
#[target_feature(enable = "avx2")]
#[inline]
fn each8(
    (a, b, y): (&[i8], &[i8], &mut [i8]),
    (za, zb): (i8, i8),
    out: (i8, i8, i8),
    lanes: impl Fn(__m256i, __m256i) -> __m256i,
) -> usize {
    let (za, zb) = (_mm256_set1_epi32(za.into()), _mm256_set1_epi32(zb.into()));
    let (a, b, y) = (
        a.as_chunks::<8>().0,
        b.as_chunks::<8>().0,
        y.as_chunks_mut::<8>().0,
    );
    for ((a, b), y) in a.iter().zip(b).zip(y.iter_mut()) {
        let (u, v) = (
            _mm256_sub_epi32(int8x8(a), za),
            _mm256_sub_epi32(int8x8(b), zb),
        );
        store8(lanes(u, v), out, y);
    }
    y.len() * 8
}

/// 8 int8 values widened to int32 lanes.
#[target_feature(enable = "avx2")]
#[inline]
fn int8x8(v: &[i8; 8]) -> __m256i {
    // SAFETY: `v` is 8 bytes, which `_mm_loadl_epi64` reads.
    _mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(v.as_ptr().cast()) })
}

/// The int32 lanes `v` plus the output zero point, clamped to `act_min..=act_max` (`out`: those three),
/// stored as 8 int8 values. As `requant`: clamping to -256..=256 first changes nothing, then the
/// offset cannot overflow.
#[target_feature(enable = "avx2")]
#[inline]
fn store8(v: __m256i, (zero_point, act_min, act_max): (i8, i8, i8), y: &mut [i8; 8]) {
    let bound = _mm256_set1_epi32(256);
    let v = _mm256_min_epi32(
        _mm256_max_epi32(v, _mm256_sub_epi32(_mm256_setzero_si256(), bound)),
        bound,
    );
    let v = _mm256_add_epi32(v, _mm256_set1_epi32(zero_point.into()));
    let v = _mm256_max_epi32(v, _mm256_set1_epi32(act_min.into()));
    let v = _mm256_min_epi32(v, _mm256_set1_epi32(act_max.into()));
    let w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let bytes = _mm_packs_epi16(w, w);
    // SAFETY: `y` is 8 bytes, which `_mm_storel_epi64` writes.
    unsafe { _mm_storel_epi64(y.as_mut_ptr().cast(), bytes) };
}
