//! The x86-64 levels' int8 kernels ([`Sse2`], [`Avx2`], [`Avx512`]) and the weight layouts they share.
//!
//! Both multiply with `pmaddwd` on sign-extended 16-bit values: int8 x int8 products summed in pairs
//! into int32 lanes, exact (`pmaddubsw`, which saturates pairs to int16, is not used). The inputs are
//! widened to int16 with the zero point subtracted (`x - x_zero_point` is within `-255..=255`, so the
//! pair sums stay far inside int32), which needs no correction term and makes zero-point padding add 0.
//!
//! GEMM weights are packed per group in blocks of 16 output channels: for each pair of inputs `k, k+1`
//! the 16 channels' `(w[c, k], w[c, k+1])` pairs, so that one broadcast pair of inputs times one packed
//! vector gives 4 or 8 channels' partial sums in channel order (an outer product per input pair).
//! Depthwise weights are packed per pair of taps, all channels' `(w[c, t], w[c, t+1])` pairs.

/// The items of [`Level`](super::Level) the x86 levels share (each level's module defines `MR`, its
/// rows per GEMM tile): the weight layouts above, inputs widened to int16 with the zero point
/// subtracted, the matrix-vector product for up to two rows, depthwise taps in pairs.
macro_rules! shared_level_items {
    () => {
        const MR: usize = MR;
        const NR: usize = super::BLOCK;
        const FOLD_X_ZERO_POINT: bool = false;
        const GEMV_MAX_ROWS: usize = 2;
        const DW_TAP_STEP: usize = 2;

        fn gemm_packed_len(n: usize, k: usize) -> usize {
            super::gemm_packed_len(n, k)
        }
        fn gemm_tile_len(k: usize) -> usize {
            MR * k.next_multiple_of(2)
        }
        fn gemv_tmp_len(k: usize) -> usize {
            k.next_multiple_of(16)
        }
        fn dw_packed_len(c: usize, taps: usize) -> usize {
            super::dw_packed_len(c, taps)
        }
        fn dw_pack(w: &[i8], c: usize, taps_in: usize, taps: usize, out: &mut [i16]) {
            super::dw_pack(w, c, taps_in, taps, out)
        }
    };
}

mod avx2;
mod avx512;
mod sse2;

use super::{pack_depthwise, DwPixel, GemvRow, Stage, Tile};

pub(crate) use avx2::{add_flat, mul_flat, Avx2};
pub(crate) use avx512::Avx512;
pub(crate) use sse2::Sse2;

/// Output channels per packed GEMM block.
const BLOCK: usize = 16;
/// Channels per depthwise vector (and the padding of packed depthwise weights).
const DW_BLOCK: usize = 8;

/// `i16` elements of one group's packed GEMM weights.
fn gemm_packed_len(n: usize, k: usize) -> usize {
    n.next_multiple_of(BLOCK) * k.next_multiple_of(2)
}

/// Packs `n` rows of `k` weights: block `b` of 16 channels, input pair `j`, channel `c`, half `h` at
/// `((b * kp / 2 + j) * 16 + c) * 2 + h` holds `w[b * 16 + c, 2 * j + h]` (zero past `n` or `k`).
fn gemm_pack(w: &[i8], n: usize, k: usize, out: &mut [i16]) {
    out.fill(0);
    pack_columns(w, n, k, 0, out);
}

/// Inputs `from..k` of [`gemm_pack`] (`out` zeroed already).
fn pack_columns(w: &[i8], n: usize, k: usize, from: usize, out: &mut [i16]) {
    let kp = k.next_multiple_of(2);
    if kp == 0 {
        return;
    }
    for (b, block) in out.chunks_exact_mut(BLOCK * kp).enumerate() {
        for c in 0..BLOCK.min(n.saturating_sub(b * BLOCK)) {
            let row = w
                .get((b * BLOCK + c) * k..(b * BLOCK + c + 1) * k)
                .unwrap_or(&[]);
            for (kk, &v) in row.iter().enumerate().skip(from) {
                if let Some(dst) = block.get_mut((kk / 2 * BLOCK + c) * 2 + kk % 2) {
                    *dst = v.into();
                }
            }
        }
    }
}

/// `i16` elements of packed depthwise weights (`taps` even).
fn dw_packed_len(c: usize, taps: usize) -> usize {
    c.next_multiple_of(DW_BLOCK) * taps.next_multiple_of(2)
}

/// Packs depthwise weights `[c, taps_in]`: tap pair `j`, channel `ch`, half `h` at
/// `(j * cpad + ch) * 2 + h` holds `w[ch, 2 * j + h]` (zero past `c` or `taps_in`).
fn dw_pack(w: &[i8], c: usize, taps_in: usize, _taps: usize, out: &mut [i16]) {
    let cpad = c.next_multiple_of(DW_BLOCK);
    pack_depthwise(w, c, taps_in, out, |t, ch| (t / 2 * cpad + ch) * 2 + t % 2);
}

/// The skeleton of the GEMM tiles: the tile's rows widened by `widen` (zero point removed) into
/// `t.tmp`, `kp = k.next_multiple_of(2)` each, then for each block of 16 channels, `block(a, w, kp, mr)`
/// with the `mr <= MR` widened rows and the block's packed weights (`kp / 2` pairs of 16 channels x
/// 2), whose sums, one per row, `finish(sums, stage, out)` writes out (up to 16 channels).
#[inline(always)]
fn gemm_blocks<A, const MR: usize>(
    t: Tile<'_>,
    widen: impl Fn(&[i8], i8, &mut [i16]),
    mut block: impl FnMut(*const i16, *const i16, usize, usize) -> [A; MR],
    mut finish: impl FnMut(A, Stage<'_>, &mut [i8]),
) {
    let kp = t.k.next_multiple_of(2);
    let mr = t.rows.len();
    let blocks = t.n.div_ceil(BLOCK);
    if mr == 0 || mr > MR || t.tmp.len() < mr * kp || t.packed.len() < blocks * BLOCK * kp {
        debug_assert!(false, "GEMM tile with inconsistent sizes");
        return;
    }
    for (row, dst) in t.rows.iter().zip(t.tmp.chunks_exact_mut(kp.max(1))) {
        widen(row.get(..t.k).unwrap_or(row), t.x_zero_point, dst);
    }
    let a = t.tmp.as_ptr();
    for b in 0..blocks {
        let c0 = b * BLOCK;
        let acc = block(a, t.packed[b * BLOCK * kp..].as_ptr(), kp, mr);
        let valid = BLOCK.min(t.n - c0);
        let stage = t.stage.skip(c0);
        for (r, acc) in acc.into_iter().take(mr).enumerate() {
            let at = r * t.out_stride + c0;
            if let Some(out) = t.out.get_mut(at..at + valid) {
                finish(acc, stage, out);
            }
        }
    }
}

/// The skeleton of the GEMV kernels: the row's inputs widened by `widen` (zero point removed) into
/// the first `k.next_multiple_of(16)` temporaries (zero past `k`), then for each `N` output channels,
/// `block(xs, rows, stage, out)` with the widened inputs, the channels' `k` weights each, the stage
/// from the first of them on, and their outputs (up to `N`).
#[inline(always)]
fn gemv_blocks<const N: usize>(
    g: GemvRow<'_>,
    widen: impl FnOnce(&[i8], i8, &mut [i16]),
    mut block: impl FnMut(&[i16], [&[i8]; N], Stage<'_>, &mut [i8]),
) {
    let Some(xs) = g.tmp.get_mut(..g.k.next_multiple_of(16)) else {
        debug_assert!(false, "GEMV temporaries too short");
        return;
    };
    widen(g.x, g.x_zero_point, xs);
    let last = g.first + g.out.len().saturating_sub(1);
    for c0 in (0..g.out.len()).step_by(N) {
        let Some(rows) = weight_rows::<N>(g.w, g.k, g.first + c0, last) else {
            return;
        };
        let end = g.out.len().min(c0 + N);
        block(xs, rows, g.stage.skip(c0), &mut g.out[c0..end]);
    }
}

/// The channels of a depthwise pixel's packed weights (`c` rounded up to [`DW_BLOCK`]), or `None`
/// where the pixel's taps or packed weights are shorter than its sizes say.
#[inline(always)]
fn dw_padded_channels(px: &DwPixel<'_>) -> Option<usize> {
    let cpad = px.c.next_multiple_of(DW_BLOCK);
    let pairs = px.taps.len() / 2;
    if px.packed.len() < pairs * cpad * 2 || px.taps.iter().any(|t| t.len() < px.c) {
        debug_assert!(false, "depthwise pixel with inconsistent sizes");
        return None;
    }
    Some(cpad)
}

/// The `k` weights of output channels `first..first + N` (channels past `last` repeat it: their
/// results are dropped), or `None` where `w` is too short.
#[inline(always)]
fn weight_rows<const N: usize>(
    w: &[i8],
    k: usize,
    first: usize,
    last: usize,
) -> Option<[&[i8]; N]> {
    let rows: [&[i8]; N] = core::array::from_fn(|j| {
        let c = (first + j).min(last);
        w.get(c * k..(c + 1) * k).unwrap_or(&[])
    });
    if rows.iter().any(|r| r.len() < k) {
        debug_assert!(false, "GEMV weights too short");
        return None;
    }
    Some(rows)
}

/// `row[from..]` (at most 16 bytes) padded with zeros to 16: the last step of a row of weights.
#[inline(always)]
fn tail16(row: &[i8], from: usize) -> [i8; 16] {
    let mut tail = [0i8; 16];
    let rest = row.get(from..).unwrap_or(&[]);
    let n = rest.len().min(16);
    tail[..n].copy_from_slice(&rest[..n]);
    tail
}

/// The skeleton of the widening loops, `dst[i] = src[i] - zero_point` as int16, zero past `src`
/// (`dst` at least as long): `step(s, d)` on each 16 inputs `s` and their 16 outputs `d`, then the
/// scalar leftovers.
#[inline(always)]
fn widen_with(
    src: &[i8],
    zero_point: i8,
    dst: &mut [i16],
    mut step: impl FnMut(&[i8], &mut [i16]),
) {
    let (mut s16, mut d16) = (src.chunks_exact(16), dst.chunks_exact_mut(16));
    for (s, d) in (&mut s16).zip(&mut d16) {
        step(s, d);
    }
    let done = (src.len() - s16.remainder().len()).min(dst.len());
    widen_tail(s16.remainder(), zero_point, &mut dst[done..]);
}

/// `dst[i] = src[i] - zero_point` as int16 for the scalar leftovers of the widening loops, zero past
/// `src`.
fn widen_tail(src: &[i8], zero_point: i8, dst: &mut [i16]) {
    let (head, rest) = dst.split_at_mut(src.len().min(dst.len()));
    for (d, &s) in head.iter_mut().zip(src) {
        *d = i16::from(s) - i16::from(zero_point);
    }
    rest.fill(0);
}
