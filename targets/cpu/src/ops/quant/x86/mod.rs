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

mod avx2;
mod avx512;
mod sse2;

pub(crate) use avx2::Avx2;
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
    out.fill(0);
    for ch in 0..c {
        let row = w.get(ch * taps_in..(ch + 1) * taps_in).unwrap_or(&[]);
        for (t, &v) in row.iter().enumerate() {
            if let Some(dst) = out.get_mut((t / 2 * cpad + ch) * 2 + t % 2) {
                *dst = v.into();
            }
        }
    }
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
