//! The aarch64 levels' int8 kernels: [`Neon`] (`smull` 8x8->16 bit products, `sadalp` into 32-bit
//! lanes) and [`NeonDotprod`] (`sdot`: four int8 products summed into each 32-bit lane), with NEON's
//! bit-exact output stage for both.
//!
//! - GEMM tiles of 4 rows x 4 channels, dot-product style: each (row, channel) pair has a vector of
//!   int32 partial sums over 16 inputs per step, read from the raw int8 rows and the weights as given
//!   (no packing), summed across lanes at the end. The input zero point goes into the bias
//!   (`-x_zero_point * sum_k w[n, k]`, computed per call), which is why im2col pads with the zero
//!   point. `smull` then `smlal2` adds two products in 16 bits, exact unless both are `-128 * -128`:
//!   that pairing runs only when no weight is -128 (checked per call), else each product is widened.
//! - Depthwise: 8 channels at a time, `x - x_zero_point` widened to 16 bits (`ssubl`), multiplied by
//!   16-bit weights packed `[tap, channel]` and accumulated in 32 bits (`smlal`, `smlal2`).
//! - The output stage: `sqrdmulh` is the rounding doubling high multiply, then the rounding right
//!   shift with ties away from zero (a `-1` fix-up of negative values, then `srshl`); single rounding
//!   is a 64-bit product (`smull`), `srshl` by `-(31 - shift)` and a saturating narrow.
//!
//! `sdot` runs through `asm!`: its intrinsic (`vdotq_s32`) is not stable in Rust 1.95. NEON is part of
//! the aarch64 baseline; the dot-product functions are reached only through [`NeonDotprod`], which only
//! the neon-dotprod kernel table uses, handed out by `Isa` only on CPUs that report `dotprod`.

use core::arch::aarch64::*;

use ember_core::ops::quant::add::QuantAddParams;
use ember_core::ops::quant::requant::RequantRounding;

use crate::ops::quant::{pack_depthwise, DwPixel, GemvRow, Level, Stage, Tile};

/// NEON without the dot-product extension.
pub(crate) struct Neon;
/// NEON with the dot-product extension.
pub(crate) struct NeonDotprod;

/// Rows per GEMM tile.
const MR: usize = 4;
/// Output channels per GEMM tile.
const NC: usize = 4;
/// Channels per depthwise step (and the padding of per-channel arrays).
const CB: usize = 8;

/// Everything but the GEMM tile, shared by both levels.
macro_rules! shared_level_items {
    () => {
        const MR: usize = MR;
        const NR: usize = CB;
        const FOLD_X_ZERO_POINT: bool = true;
        const GEMV_MAX_ROWS: usize = 0;
        const DW_TAP_STEP: usize = 1;

        fn gemm_packed_len(_: usize, _: usize) -> usize {
            0
        }
        fn gemm_pack(_: &[i8], _: usize, _: usize, _: &mut [i16]) {}
        fn gemm_tile_len(_: usize) -> usize {
            0
        }
        fn row_sums(w: &[i8], k: usize, sums: &mut [i32]) -> bool {
            // SAFETY: NEON is part of the aarch64 baseline.
            unsafe { row_sums(w, k, sums) }
        }
        fn gemv_tmp_len(_: usize) -> usize {
            0
        }
        /// Not used (`GEMV_MAX_ROWS` is 0: fully connected layers run the GEMM); kept exact anyway.
        fn gemv(g: GemvRow<'_>) {
            let (k, first) = (g.k, g.first);
            for (j, o) in g.out.iter_mut().enumerate() {
                let row = g.w.get((first + j) * k..(first + j + 1) * k).unwrap_or(&[]);
                let acc = row.iter().zip(g.x).fold(0i32, |a, (&w, &x)| {
                    a.wrapping_add(i32::from(w) * (i32::from(x) - i32::from(g.x_zero_point)))
                });
                *o = g.stage.finish(j, acc);
            }
        }
        fn dw_packed_len(c: usize, taps: usize) -> usize {
            c.next_multiple_of(CB) * taps
        }
        fn dw_pack(w: &[i8], c: usize, taps_in: usize, _: usize, out: &mut [i16]) {
            let cpad = c.next_multiple_of(CB);
            pack_depthwise(w, c, taps_in, out, |t, ch| t * cpad + ch);
        }
        fn depthwise(px: DwPixel<'_>) {
            // SAFETY: NEON is part of the aarch64 baseline.
            unsafe { depthwise(px) }
        }
    };
}

impl Level for Neon {
    const GEMM_NAME: &'static str = "neon-int8-gemm";
    const GROUPED_NAME: &'static str = "neon-int8-grouped";
    shared_level_items!();

    fn gemm(t: Tile<'_>) {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe {
            if t.pair_safe {
                gemm::<SmullPair>(t)
            } else {
                gemm::<Smull>(t)
            }
        }
    }
}

impl Level for NeonDotprod {
    const GEMM_NAME: &'static str = "neon-dotprod-int8-gemm";
    const GROUPED_NAME: &'static str = "neon-int8-grouped";
    shared_level_items!();

    fn gemm(t: Tile<'_>) {
        // SAFETY: this level's kernels run only from the neon-dotprod table, which `Isa` hands out
        // only on CPUs with the dot-product extension.
        unsafe { gemm_sdot(t) }
    }
}

/// One step of a dot product: `acc` lane `i` plus `sum_{j < 4} a[4i + j] * w[4i + j]` (or any grouping
/// of the 16 products into the 4 lanes: only the lanes' total counts).
trait Dot {
    /// # Safety
    /// The CPU must have the instructions the step uses.
    unsafe fn step(acc: int32x4_t, a: int8x16_t, w: int8x16_t) -> int32x4_t;
}

/// Each product widened to 16 bits (`smull`, `smull2`), pairs summed into 32 bits (`sadalp`).
struct Smull;
/// Two products summed in 16 bits (`smull`, `smlal2`), exact when no weight is -128.
struct SmullPair;
/// `sdot`.
struct Sdot;

impl Dot for Smull {
    #[inline(always)]
    unsafe fn step(acc: int32x4_t, a: int8x16_t, w: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe {
            let acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(w)));
            vpadalq_s16(acc, vmull_high_s8(a, w))
        }
    }
}

impl Dot for SmullPair {
    #[inline(always)]
    unsafe fn step(acc: int32x4_t, a: int8x16_t, w: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline. Each 16-bit lane sums two products of
        // magnitude at most 128 * 127 (no weight is -128): at most 32512, no overflow.
        unsafe {
            let pairs = vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(w)), a, w);
            vpadalq_s16(acc, pairs)
        }
    }
}

impl Dot for Sdot {
    #[inline(always)]
    unsafe fn step(mut acc: int32x4_t, a: int8x16_t, w: int8x16_t) -> int32x4_t {
        // SAFETY: `sdot` only reads and writes the three vector registers; the caller's CPU has the
        // dot-product extension (this is inlined into `gemm_sdot`, which enables it).
        unsafe {
            core::arch::asm!(
                "sdot {acc:v}.4s, {a:v}.16b, {w:v}.16b",
                acc = inout(vreg) acc,
                a = in(vreg) a,
                w = in(vreg) w,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        acc
    }
}

/// [`gemm`] with `sdot`.
#[target_feature(enable = "dotprod")]
fn gemm_sdot(t: Tile<'_>) {
    // SAFETY: this function enables the dot-product extension (its callers' CPUs have it).
    unsafe { gemm::<Sdot>(t) }
}

/// One GEMM tile: for each 4 channels, the tile's rows dotted with their weights, then finished.
///
/// # Safety
/// The CPU must have the instructions `D` uses.
#[inline(always)]
unsafe fn gemm<D: Dot>(t: Tile<'_>) {
    let (k, n, mr) = (t.k, t.n, t.rows.len());
    if mr == 0 || mr > MR || t.w.len() < n * k || t.rows.iter().any(|r| r.len() < k) {
        debug_assert!(false, "GEMM tile with inconsistent sizes");
        return;
    }
    let rows: [*const i8; MR] = core::array::from_fn(|r| t.rows[r.min(mr - 1)].as_ptr());
    for c0 in (0..n).step_by(NC) {
        // Channels past `n` repeat the last one (their results are dropped).
        let w: [*const i8; NC] = core::array::from_fn(|j| t.w[(c0 + j).min(n - 1) * k..].as_ptr());
        // SAFETY: every row pointer has `k` readable bytes, and so has every weight row (checked
        // above); `tile::<D, R>` reads the first `R <= mr` rows only.
        let sums = unsafe {
            match mr {
                1 => spill(tile::<D, 1>(&rows, &w, k)),
                2 => spill(tile::<D, 2>(&rows, &w, k)),
                3 => spill(tile::<D, 3>(&rows, &w, k)),
                _ => tile::<D, 4>(&rows, &w, k),
            }
        };
        let valid = NC.min(n - c0);
        let stage = t.stage.skip(c0);
        for (r, &sum) in sums.iter().take(mr).enumerate() {
            let at = r * t.out_stride + c0;
            if let Some(out) = t.out.get_mut(at..at + valid) {
                // SAFETY: NEON is part of the aarch64 baseline.
                unsafe { finish4(sum, stage, out) };
            }
        }
    }
}

/// `R` rows' channel sums widened to the tile's 4 (the extra rows unused).
#[inline(always)]
fn spill<const R: usize>(sums: [int32x4_t; R]) -> [int32x4_t; MR] {
    let mut all = [sums[0]; MR];
    all[..R].copy_from_slice(&sums);
    all
}

/// `R` rows x 4 channels: lane `j` of row `r`'s result is `sum_k a[r][k] * w[j][k]`.
///
/// # Safety
/// `a[..R]` and `w` must each point to `k` readable bytes; the CPU must have `D`'s instructions.
#[inline(always)]
unsafe fn tile<D: Dot, const R: usize>(
    a: &[*const i8; MR],
    w: &[*const i8; NC],
    k: usize,
) -> [int32x4_t; R] {
    // SAFETY: loads stay below `k` bytes from each pointer (the caller's contract); the tail is
    // copied into zero-padded buffers (zero weights add nothing).
    unsafe {
        let mut acc = [[vdupq_n_s32(0); NC]; R];
        let full = k / 16 * 16;
        for kk in (0..full).step_by(16) {
            let wv: [int8x16_t; NC] = core::array::from_fn(|j| vld1q_s8(w[j].add(kk)));
            for (r, acc) in acc.iter_mut().enumerate() {
                let av = vld1q_s8(a[r].add(kk));
                for (acc, &wv) in acc.iter_mut().zip(&wv) {
                    *acc = D::step(*acc, av, wv);
                }
            }
        }
        if full < k {
            let tail = |p: *const i8| {
                let mut b = [0i8; 16];
                core::ptr::copy_nonoverlapping(p.add(full), b.as_mut_ptr(), k - full);
                vld1q_s8(b.as_ptr())
            };
            let wv: [int8x16_t; NC] = core::array::from_fn(|j| tail(w[j]));
            for (r, acc) in acc.iter_mut().enumerate() {
                let av = tail(a[r]);
                for (acc, &wv) in acc.iter_mut().zip(&wv) {
                    *acc = D::step(*acc, av, wv);
                }
            }
        }
        core::array::from_fn(|r| {
            let [s0, s1, s2, s3] = acc[r];
            vpaddq_s32(vpaddq_s32(s0, s1), vpaddq_s32(s2, s3))
        })
    }
}

/// `sums[i] = sum(w[i * k..][..k])` for every row, and whether some weight is -128.
#[target_feature(enable = "neon")]
fn row_sums(w: &[i8], k: usize, sums: &mut [i32]) -> bool {
    let mut seen = vdupq_n_u8(0);
    let mut tail_min = false;
    for (i, sum) in sums.iter_mut().enumerate() {
        let row = w.get(i * k..(i + 1) * k).unwrap_or(&[]);
        let mut acc = vdupq_n_s32(0);
        let mut chunks = row.chunks_exact(16);
        for c in &mut chunks {
            // SAFETY: `c` is 16 bytes.
            let v = unsafe { vld1q_s8(c.as_ptr()) };
            acc = vpadalq_s16(acc, vpaddlq_s8(v));
            seen = vorrq_u8(seen, vceqq_s8(v, vdupq_n_s8(i8::MIN)));
        }
        let rest = chunks.remainder();
        tail_min |= rest.contains(&i8::MIN);
        let tail = rest.iter().fold(0i32, |a, &v| a.wrapping_add(v.into()));
        *sum = vaddvq_s32(acc).wrapping_add(tail);
    }
    tail_min || vmaxvq_u8(seen) != 0
}

/// One depthwise output pixel: 8 channels at a time, one tap per `smlal` pair.
#[target_feature(enable = "neon")]
fn depthwise(px: DwPixel<'_>) {
    let c = px.c;
    let cpad = c.next_multiple_of(CB);
    if px.packed.len() < px.taps.len() * cpad || px.taps.iter().any(|t| t.len() < c) {
        debug_assert!(false, "depthwise pixel with inconsistent sizes");
        return;
    }
    let zp = vdup_n_s8(px.x_zero_point);
    let w = px.packed.as_ptr();
    let mut c0 = 0;
    while c0 < c {
        let (mut lo, mut hi) = (vdupq_n_s32(0), vdupq_n_s32(0));
        let whole = c0 + CB <= c;
        for (t, tap) in px.taps.iter().enumerate() {
            let xv = if whole {
                // SAFETY: every tap holds `c >= c0 + 8` channels (checked above).
                unsafe { vld1_s8(tap.as_ptr().add(c0)) }
            } else {
                let mut b = [px.x_zero_point; CB];
                b[..c - c0].copy_from_slice(&tap[c0..c]);
                // SAFETY: `b` is 8 bytes.
                unsafe { vld1_s8(b.as_ptr()) }
            };
            let xd = vsubl_s8(xv, zp);
            // SAFETY: tap `t`, channels `c0..c0 + 8 <= cpad`: inside the packed weights (checked).
            let wv = unsafe { vld1q_s16(w.add(t * cpad + c0)) };
            lo = vmlal_s16(lo, vget_low_s16(xd), vget_low_s16(wv));
            hi = vmlal_high_s16(hi, xd, wv);
        }
        let end = c.min(c0 + CB);
        let stage = px.stage.skip(c0);
        finish4(lo, stage, &mut px.out[c0..end.min(c0 + 4)]);
        if end > c0 + 4 {
            finish4(hi, stage.skip(4), &mut px.out[c0 + 4..end]);
        }
        c0 += CB;
    }
}

/// Finishes 4 channels' accumulators into `out` (up to 4).
#[target_feature(enable = "neon")]
fn finish4(acc: int32x4_t, stage: Stage<'_>, out: &mut [i8]) {
    let lanes = (
        stage.bias.first_chunk::<4>(),
        stage.mult.first_chunk::<4>(),
        stage.shift.first_chunk::<4>(),
    );
    match lanes {
        (Some(b), Some(m), Some(s)) if stage.simd => {
            // SAFETY: `b`, `m`, `s` are 4 int32 each.
            let (b, m, s) = unsafe {
                (
                    vld1q_s32(b.as_ptr()),
                    vld1q_s32(m.as_ptr()),
                    vld1q_s32(s.as_ptr()),
                )
            };
            let v = vqmovn_s32(requant(acc, b, m, s, &stage));
            let bytes = vqmovn_s16(vcombine_s16(v, v));
            let mut all = [0i8; 8];
            // SAFETY: `all` is 8 bytes.
            unsafe { vst1_s8(all.as_mut_ptr(), bytes) };
            let n = out.len().min(4);
            out[..n].copy_from_slice(&all[..n]);
        }
        _ => {
            let mut a = [0i32; 4];
            // SAFETY: `a` is 4 int32.
            unsafe { vst1q_s32(a.as_mut_ptr(), acc) };
            stage.finish_all(&a, out);
        }
    }
}

/// The output stage of 4 channels (`Stage::finish`, vectorized), exact for multipliers `>= 0` and
/// shifts in `-31..=30` (the stage's `simd`). Lanes come out as int32 within int8.
#[target_feature(enable = "neon")]
fn requant(
    acc: int32x4_t,
    bias: int32x4_t,
    mult: int32x4_t,
    shift: int32x4_t,
    stage: &Stage<'_>,
) -> int32x4_t {
    let scaled = scale(vaddq_s32(acc, bias), mult, shift, stage.rounding);
    offset_and_clamp(scaled, stage.y_zero_point, stage.act_min, stage.act_max)
}

/// `x * mult * 2^(shift - 31)` rounded in `rounding` mode (`RequantRounding::scale`, 4 lanes), exact
/// for multipliers `>= 0` and shifts in `-31..=30`.
#[target_feature(enable = "neon")]
fn scale(x: int32x4_t, mult: int32x4_t, shift: int32x4_t, rounding: RequantRounding) -> int32x4_t {
    let zero = vdupq_n_s32(0);
    match rounding {
        RequantRounding::Double => {
            // Left shift (wrapping), rounding doubling high multiply, rounding right shift with ties
            // away from zero: `srshl` rounds ties up, so negative values are first moved down by one
            // (saturating: `i32::MIN` stays, and still gives the exact quotient).
            let (left, neg_right) = (vmaxq_s32(shift, zero), vminq_s32(shift, zero));
            let high = vqrdmulhq_s32(vshlq_s32(x, left), mult);
            let fix = vshrq_n_s32::<31>(vandq_s32(high, neg_right));
            vrshlq_s32(vqaddq_s32(high, fix), neg_right)
        }
        RequantRounding::Single => {
            // `(x * mult + 2^(t - 1)) >> t` with `t = 31 - shift`, in 64 bits, saturated to int32.
            let neg_total = vsubq_s32(shift, vdupq_n_s32(31));
            let lo = vrshlq_s64(
                vmull_s32(vget_low_s32(x), vget_low_s32(mult)),
                vmovl_s32(vget_low_s32(neg_total)),
            );
            let hi = vrshlq_s64(vmull_high_s32(x, mult), vmovl_high_s32(neg_total));
            vqmovn_high_s64(vqmovn_s64(lo), hi)
        }
    }
}

/// `clamp(v + zero_point, act_min, act_max)` as in `Stage::finish`: clamping to `-256..=256` first
/// changes nothing once the int8 zero point is added and the int8 bounds applied, and keeps the add
/// from overflowing.
#[target_feature(enable = "neon")]
fn offset_and_clamp(v: int32x4_t, zero_point: i8, act_min: i8, act_max: i8) -> int32x4_t {
    let bound = vdupq_n_s32(256);
    let v = vminq_s32(vmaxq_s32(v, vnegq_s32(bound)), bound);
    let v = vaddq_s32(v, vdupq_n_s32(zero_point.into()));
    let v = vmaxq_s32(v, vdupq_n_s32(act_min.into()));
    vminq_s32(v, vdupq_n_s32(act_max.into()))
}

/// int8 Add of equal-shaped operands (`QuantAdd` with no broadcasting), 8 elements at a time: each
/// operand widened, its zero point removed, shifted left by `left_shift` and scaled by its multiplier;
/// the sum scaled by the output multiplier, offset and clamped, as the reference's `add` per element
/// ([`scale`] is exact for the validated parameters: multipliers `>= 0`, shifts in `-31..=0`). The last
/// `len % 8` elements are left to the caller: returns how many it wrote. `a`, `b` and `y` must be equally long (else it panics).
#[target_feature(enable = "neon")]
pub(crate) fn add_flat(p: &QuantAddParams, a: &[i8], b: &[i8], y: &mut [i8]) -> usize {
    let left = vdupq_n_s32(p.left_shift);
    let (za, zb) = (
        vdupq_n_s16(p.a_zero_point.into()),
        vdupq_n_s16(p.b_zero_point.into()),
    );
    let operand = |v: int16x4_t, m: i32, s: i32| {
        scale(
            vshlq_s32(vmovl_s16(v), left),
            vdupq_n_s32(m),
            vdupq_n_s32(s),
            p.rounding,
        )
    };
    let full = y.len() / 8 * 8;
    for ((a, b), y) in a[..full]
        .chunks_exact(8)
        .zip(b[..full].chunks_exact(8))
        .zip(y[..full].chunks_exact_mut(8))
    {
        // SAFETY: each chunk is 8 bytes, which `vld1_s8` reads.
        let (va, vb) = unsafe { (vld1_s8(a.as_ptr()), vld1_s8(b.as_ptr())) };
        // `x - zero_point` in 16 bits (within -255..=255).
        let (da, db) = (vsubq_s16(vmovl_s8(va), za), vsubq_s16(vmovl_s8(vb), zb));
        let half = |a: int16x4_t, b: int16x4_t| {
            let sum = vaddq_s32(
                operand(a, p.a_multiplier, p.a_shift),
                operand(b, p.b_multiplier, p.b_shift),
            );
            let out = scale(
                sum,
                vdupq_n_s32(p.y_multiplier),
                vdupq_n_s32(p.y_shift),
                p.rounding,
            );
            offset_and_clamp(out, p.y_zero_point, p.act_min, p.act_max)
        };
        let lo = half(vget_low_s16(da), vget_low_s16(db));
        let hi = half(vget_high_s16(da), vget_high_s16(db));
        let bytes = vqmovn_s16(vcombine_s16(vqmovn_s32(lo), vqmovn_s32(hi)));
        // SAFETY: `y` is 8 bytes, which `vst1_s8` writes.
        unsafe { vst1_s8(y.as_mut_ptr(), bytes) };
    }
    full
}
