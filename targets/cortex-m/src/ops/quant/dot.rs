//! The inner loops: `sum(w[i] * (x[i] + x_offset))` over int8 runs, four products per step.
//!
//! A step loads four `x` and four `w` bytes as words. `SXTAB16` adds the offset to bytes 0 and 2 (and,
//! rotated, 1 and 3) of the `x` word as int16 lanes (`x + x_offset` is within `-255..=255`, so the lane
//! add is exact), `SXTB16` sign-extends the same bytes of the `w` word, and two `SMLAD`s add the four
//! products to the int32 accumulator, wrapping as the reference's `wrapping_add` does.

use ember_core::ops::quant::conv::DotOffset;

use crate::dsp::{smlad, sxtab16, sxtab16_ror8, sxtb16, sxtb16_ror8};

/// Elements per step: one word of int8.
pub const STEP: usize = 4;

/// `x_offset` in both int16 lanes (its low 16 bits: `x_offset` is within `-127..=128`).
#[inline(always)]
pub fn offset_lanes(x_offset: i32) -> u32 {
    let lane = u32::from(x_offset as u16);
    lane | (lane << 16)
}

/// Four int8 as a little-endian word (one unaligned `LDR` on ARMv7-M).
#[inline(always)]
fn word(b: &[i8]) -> u32 {
    u32::from_le_bytes([b[0] as u8, b[1] as u8, b[2] as u8, b[3] as u8])
}

/// The scalar tail: what the reference computes per element.
#[inline(always)]
fn tail(acc: i32, xs: &[i8], ws: &[i8], x_offset: i32) -> i32 {
    xs.iter().zip(ws).fold(acc, |acc, (&xv, &wv)| {
        acc.wrapping_add(i32::from(wv) * (i32::from(xv) + x_offset))
    })
}

/// `sum(ws[i] * (xs[i] + x_offset))` over the common length, wrapping (the reference's `dot_offset`).
#[inline]
pub fn dot_offset(xs: &[i8], ws: &[i8], x_offset: i32) -> i32 {
    let n = xs.len().min(ws.len());
    let (xs, ws) = (&xs[..n], &ws[..n]);
    let off = offset_lanes(x_offset);
    let mut acc = 0i32;
    let (mut x4, mut w4) = (xs.chunks_exact(STEP), ws.chunks_exact(STEP));
    for (xc, wc) in (&mut x4).zip(&mut w4) {
        let (x, w) = (word(xc), word(wc));
        acc = smlad(sxtab16(off, x), sxtb16(w), acc);
        acc = smlad(sxtab16_ror8(off, x), sxtb16_ror8(w), acc);
    }
    tail(acc, x4.remainder(), w4.remainder(), x_offset)
}

/// [`dot_offset`] of one `xs` with two weight runs `wa` and `wb` (two output channels), unpacking each
/// `x` word once for both. The three runs have the same length (the shortest one's is used).
#[inline]
pub fn dot_offset2(xs: &[i8], wa: &[i8], wb: &[i8], x_offset: i32) -> (i32, i32) {
    let n = xs.len().min(wa.len()).min(wb.len());
    let (xs, wa, wb) = (&xs[..n], &wa[..n], &wb[..n]);
    let off = offset_lanes(x_offset);
    let (mut acc_a, mut acc_b) = (0i32, 0i32);
    let mut x4 = xs.chunks_exact(STEP);
    let (mut a4, mut b4) = (wa.chunks_exact(STEP), wb.chunks_exact(STEP));
    for ((xc, ac), bc) in (&mut x4).zip(&mut a4).zip(&mut b4) {
        let x = word(xc);
        let (x02, x13) = (sxtab16(off, x), sxtab16_ror8(off, x));
        let (a, b) = (word(ac), word(bc));
        acc_a = smlad(x02, sxtb16(a), acc_a);
        acc_a = smlad(x13, sxtb16_ror8(a), acc_a);
        acc_b = smlad(x02, sxtb16(b), acc_b);
        acc_b = smlad(x13, sxtb16_ror8(b), acc_b);
    }
    let rest = x4.remainder();
    (
        tail(acc_a, rest, a4.remainder(), x_offset),
        tail(acc_b, rest, b4.remainder(), x_offset),
    )
}

/// The SMLAD inner product, which core's int8 loop nests
/// ([`conv2d_with`](ember_core::ops::quant::conv::conv2d_with),
/// [`fully_connected_with`](ember_core::ops::quant::fully_connected::fully_connected_with)) run with:
/// [`dot_offset`], and [`dot_offset2`] for two outputs at a time.
pub struct Smlad;

impl DotOffset for Smlad {
    const PAIRS: bool = true;

    #[inline(always)]
    fn dot(xs: &[i8], ws: &[i8], x_offset: i32) -> i32 {
        dot_offset(xs, ws, x_offset)
    }

    #[inline(always)]
    fn dot2(xs: &[i8], wa: &[i8], wb: &[i8], x_offset: i32) -> (i32, i32) {
        dot_offset2(xs, wa, wb, x_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn reference(xs: &[i8], ws: &[i8], x_offset: i32) -> i32 {
        tail(0, xs, ws, x_offset)
    }

    #[test]
    fn dots_match_the_scalar_sum_at_every_length_and_extreme() {
        let values: [i8; 7] = [-128, -127, -1, 0, 1, 100, 127];
        for n in 0..=13 {
            for (k, &x_offset) in [-127, -1, 0, 1, 128].iter().enumerate() {
                let xs: Vec<i8> = (0..n).map(|i| values[(i * 3 + k) % 7]).collect();
                let wa: Vec<i8> = (0..n).map(|i| values[(i * 5 + 1) % 7]).collect();
                let wb: Vec<i8> = (0..n).map(|i| values[(i + k + 2) % 7]).collect();
                assert_eq!(
                    dot_offset(&xs, &wa, x_offset),
                    reference(&xs, &wa, x_offset)
                );
                assert_eq!(
                    dot_offset2(&xs, &wa, &wb, x_offset),
                    (reference(&xs, &wa, x_offset), reference(&xs, &wb, x_offset))
                );
            }
        }
    }
}
