//! int8 kernels (Conv2d, depthwise Conv2d, FullyConnected) for each SIMD level, bit-identical to
//! `ember_core::ops::quant`'s reference kernels in both rounding modes.
//!
//! The arithmetic is the reference's, reordered only where int32 wrapping addition makes the order
//! irrelevant: every output is `requant(sum_k w[n, k] * (x[m, k] - x_zero_point) + b[n])`, accumulated
//! exactly in int32 (int8 x int8 products widened to 16 bits, summed into 32-bit lanes), then scaled by
//! the same `(multiplier, shift)` arithmetic as `requant::multiply_by_quantized_multiplier` or its
//! single-rounding twin, vectorized ([`stage`]).
//!
//! The drivers are shared by every level: [`gemm`] (convolutions as a matrix product over im2col rows
//! or, for 1x1 kernels, over the input itself; fully connected layers), [`depthwise`] (vectorized over
//! channels) and [`fully_connected`]; each level (the [`Level`] trait: `x86::{Sse2, Avx2}`,
//! `arm::{Neon, NeonDotprod}`) supplies the inner loops, its weight packing and its output stage. A call
//! prepares its packed weights and per-channel output stage in the workspace's scratch, then splits
//! its output rows over the workspace's workers.
//!
//! A kernel falls back to the reference kernel when the workspace is missing or its scratch is shorter
//! than [`scratch`] asks for, and when a tensor is shorter than its dims say (which a session never
//! gives).

// The drivers serve the SIMD levels, which only x86-64 and aarch64 have: elsewhere every table keeps
// the reference kernels and nothing here is used.
#![cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code, unused_imports)
)]

pub(crate) mod add;
pub mod conv;
pub mod depthwise;
mod elementwise;
pub mod fully_connected;
mod gemm;
mod geometry;
pub(crate) mod mul;
mod scratch;
mod split;
mod stage;

#[cfg(target_arch = "aarch64")]
pub(crate) mod arm;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;

use ember_core::ops::quant::conv::QuantConv2dFn;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedFn;
use ember_core::ops::In;
use ember_core::workspace::ScratchFn;
use ember_core::OpKind;

pub(crate) use stage::Stage;

/// Most pixels a level's GEMM tile holds ([`Level::MR`] is at most this).
pub(crate) const MAX_MR: usize = 4;

/// One GEMM tile: up to [`Level::MR`] rows of inputs against every output channel of one group. Each
/// level reads the fields its layout needs (x86 the packed weights, aarch64 the raw ones).
#[allow(dead_code)]
pub(crate) struct Tile<'a> {
    /// The rows, `1..=MR` of them, each `k` raw int8 inputs (the zero point not removed; padding holds
    /// the zero point).
    pub rows: &'a [&'a [i8]],
    /// Inputs per row (`KH * KW * IC / groups`).
    pub k: usize,
    /// Zero point of the inputs.
    pub x_zero_point: i8,
    /// The group's weights as given: `n` rows of `k` (OHWI).
    pub w: &'a [i8],
    /// The group's weights as the level packed them ([`Level::gemm_pack`]).
    pub packed: &'a [i16],
    /// Output channels of the group.
    pub n: usize,
    /// No weight is -128, so two int8 products always sum within int16 (levels that read raw weights
    /// may then add products in pairs before widening).
    pub pair_safe: bool,
    /// The group's output stage (channel 0 is the group's first).
    pub stage: Stage<'a>,
    /// Row `r` of the tile goes to `out[r * out_stride..][..n]`.
    pub out: &'a mut [i8],
    /// Distance between output rows (all output channels).
    pub out_stride: usize,
    /// The worker's temporaries for the level ([`Level::gemm_tile_len`] elements).
    pub tmp: &'a mut [i16],
}

/// One output pixel of a depthwise convolution (one input channel per output channel).
pub(crate) struct DwPixel<'a> {
    /// For each kernel tap (a multiple of [`Level::DW_TAP_STEP`] of them), the `c` input channels it
    /// reads: the input pixel's, or a row of zero points for taps in the padding.
    pub taps: &'a [&'a [i8]],
    /// Channels.
    pub c: usize,
    /// Zero point of the inputs.
    pub x_zero_point: i8,
    /// The weights as the level packed them ([`Level::dw_pack`]).
    pub packed: &'a [i16],
    /// The output stage.
    pub stage: Stage<'a>,
    /// The pixel's `c` outputs.
    pub out: &'a mut [i8],
}

/// One row of a fully connected layer for [`Level::gemv`], output channels `first..first + out.len()`:
/// `out[j] = stage(sum_k w[first + j, k] * (x[k] - x_zero_point))`. (aarch64's levels need no
/// temporaries.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct GemvRow<'a> {
    /// The row's `k` inputs.
    pub x: &'a [i8],
    /// Zero point of the inputs.
    pub x_zero_point: i8,
    /// All the weights (rows of `k`).
    pub w: &'a [i8],
    /// Inputs per row.
    pub k: usize,
    /// The first output channel.
    pub first: usize,
    /// The output stage (channel 0 is `first`).
    pub stage: Stage<'a>,
    /// The row's outputs, channels `first..first + out.len()`.
    pub out: &'a mut [i8],
    /// The worker's temporaries ([`Level::gemv_tmp_len`] elements).
    pub tmp: &'a mut [i16],
}

/// What an instruction-set level supplies to the shared drivers. Implemented by zero-sized types whose
/// kernels use that level's instructions: they are reached only through the level's kernel table,
/// which [`crate::Isa`] hands out only on a CPU that has the level (what makes their `unsafe` sound).
pub(crate) trait Level: 'static {
    /// The kernel name `variant` reports for the GEMM path (convolutions, fully connected).
    const GEMM_NAME: &'static str;
    /// The kernel name `variant` reports for grouped convolutions: the depthwise kernel where the shapes
    /// allow (one input and one output channel per group), else the GEMM per group.
    const GROUPED_NAME: &'static str;
    /// Rows (output pixels) per GEMM tile, at most [`MAX_MR`].
    const MR: usize;
    /// Channel granularity: per-channel arrays are padded to a multiple of it.
    const NR: usize;
    /// The GEMM reads raw inputs and folds `-x_zero_point * sum_k w[n, k]` into the bias (`true`), or
    /// subtracts the zero point from the inputs itself (`false`).
    const FOLD_X_ZERO_POINT: bool;
    /// Fully connected layers with at most this many rows run [`Level::gemv`] (no packing).
    const GEMV_MAX_ROWS: usize;
    /// Depthwise taps are handed over in multiples of this (padded with zero-point rows).
    const DW_TAP_STEP: usize;

    /// `i16` elements of one group's packed weights (`n` channels, `k` inputs each).
    fn gemm_packed_len(n: usize, k: usize) -> usize;
    /// Packs `n` rows of `k` weights into `out` (`gemm_packed_len` elements).
    fn gemm_pack(w: &[i8], n: usize, k: usize, out: &mut [i16]);
    /// `i16` temporaries a worker needs for tiles of rows of `k`.
    fn gemm_tile_len(k: usize) -> usize;
    /// Computes and writes one tile.
    fn gemm(t: Tile<'_>);
    /// `sums[i] = sum(w[i * k..][..k])` for the `sums.len()` rows, and whether some weight is -128
    /// (used where [`Level::FOLD_X_ZERO_POINT`] is set).
    fn row_sums(w: &[i8], k: usize, sums: &mut [i32]) -> bool {
        let mut has_min = false;
        for (i, s) in sums.iter_mut().enumerate() {
            let row = w.get(i * k..(i + 1) * k).unwrap_or(&[]);
            has_min |= row.contains(&i8::MIN);
            *s = row.iter().fold(0i32, |a, &v| a.wrapping_add(v.into()));
        }
        has_min
    }
    /// `i16` temporaries a worker needs for [`Level::gemv`] over rows of `k`.
    fn gemv_tmp_len(k: usize) -> usize;
    /// One row of a fully connected layer (see [`GemvRow`]).
    fn gemv(g: GemvRow<'_>);
    /// `i16` elements of packed depthwise weights (`c` channels, `taps` taps, a multiple of
    /// [`Level::DW_TAP_STEP`]).
    fn dw_packed_len(c: usize, taps: usize) -> usize;
    /// Packs depthwise weights `[c, taps_in]` (OHWI with one input channel) for `taps` taps (the extra
    /// ones zero).
    fn dw_pack(w: &[i8], c: usize, taps_in: usize, taps: usize, out: &mut [i16]);
    /// Computes and writes one output pixel.
    fn depthwise(px: DwPixel<'_>);
}

/// Packs depthwise weights `[c, taps_in]` (OHWI with one input channel) as int16: `out` zeroed, then
/// `w[ch, t]` at `at(t, ch)` (dropped where that is past `out`). Each level's [`Level::dw_pack`] names
/// its layout.
#[inline(always)]
fn pack_depthwise(
    w: &[i8],
    c: usize,
    taps_in: usize,
    out: &mut [i16],
    at: impl Fn(usize, usize) -> usize,
) {
    out.fill(0);
    for ch in 0..c {
        let row = w.get(ch * taps_in..(ch + 1) * taps_in).unwrap_or(&[]);
        for (t, &v) in row.iter().enumerate() {
            if let Some(dst) = out.get_mut(at(t, ch)) {
                *dst = v.into();
            }
        }
    }
}

/// The int8 entries of one level's kernel table.
pub(crate) struct Entries {
    /// `Kernels::quant_conv2d`.
    pub conv2d: QuantConv2dFn,
    /// `Kernels::quant_fully_connected`.
    pub fully_connected: QuantFullyConnectedFn,
    /// Scratch bytes the int8 kernels ask for (0 for other ops; the table's scratch function takes the
    /// larger of this and the f32 kernels').
    pub scratch: ScratchFn,
    /// What `variant` reports: (GEMM kernels, grouped convolutions).
    pub names: (&'static str, &'static str),
}

/// The tensors of an int8 convolution or fully connected layer, as its table entry gets them.
#[derive(Clone, Copy)]
pub(crate) struct Tensors<'a> {
    /// The input.
    pub x: In<'a, i8>,
    /// The weights (OHWI, or `[OUT, IN]`).
    pub w: In<'a, i8>,
    /// The bias, one per output channel.
    pub b: Option<&'a [i32]>,
    /// `(multiplier, shift)` rows: one per output channel, or one for all.
    pub requant: &'a [i32],
}

impl Entries {
    const fn of<L: Level>() -> Entries {
        Entries {
            conv2d: |p, x, w, b, requant, y, ws| {
                conv::conv2d::<L>(p, Tensors { x, w, b, requant }, y, ws)
            },
            fully_connected: |p, x, w, b, requant, y, ws| {
                fully_connected::fully_connected::<L>(p, Tensors { x, w, b, requant }, y, ws)
            },
            scratch: scratch_of::<L>,
            names: (L::GEMM_NAME, L::GROUPED_NAME),
        }
    }

    /// The reference kernels, for the levels this architecture lacks (their tables are never handed
    /// out here).
    const REFERENCE: Entries = Entries {
        conv2d: ember_core::REFERENCE.quant_conv2d,
        fully_connected: ember_core::REFERENCE.quant_fully_connected,
        scratch: no_scratch,
        names: ("reference", "reference"),
    };
}

/// The reference int8 kernels: the scalar table's, and the other architecture's levels'.
pub(crate) const NONE: Entries = Entries::REFERENCE;
/// SSE2's int8 entries.
#[cfg(target_arch = "x86_64")]
pub(crate) const SSE2: Entries = Entries::of::<x86::Sse2>();
/// AVX2's int8 entries.
#[cfg(target_arch = "x86_64")]
pub(crate) const AVX2: Entries = Entries::of::<x86::Avx2>();
/// The AVX-512 level's int8 entries (VNNI).
#[cfg(target_arch = "x86_64")]
pub(crate) const AVX512: Entries = Entries::of::<x86::Avx512>();
/// NEON's int8 entries.
#[cfg(target_arch = "aarch64")]
pub(crate) const NEON: Entries = Entries::of::<arm::Neon>();
/// NEON with the dot-product extension's int8 entries.
#[cfg(target_arch = "aarch64")]
pub(crate) const NEON_DOTPROD: Entries = Entries::of::<arm::NeonDotprod>();

#[cfg(not(target_arch = "x86_64"))]
pub(crate) const SSE2: Entries = Entries::REFERENCE;
#[cfg(not(target_arch = "x86_64"))]
pub(crate) const AVX2: Entries = Entries::REFERENCE;
#[cfg(not(target_arch = "x86_64"))]
pub(crate) const AVX512: Entries = Entries::REFERENCE;
#[cfg(not(target_arch = "aarch64"))]
pub(crate) const NEON: Entries = Entries::REFERENCE;
#[cfg(not(target_arch = "aarch64"))]
pub(crate) const NEON_DOTPROD: Entries = Entries::REFERENCE;

/// The reference kernels ask for no scratch.
fn no_scratch(_: &OpKind, _: &[&[usize]], _: &[usize], _: usize) -> usize {
    0
}

/// Scratch bytes level `L`'s int8 kernels ask for (0 for other ops).
fn scratch_of<L: Level>(
    kind: &OpKind,
    inputs: &[&[usize]],
    output: &[usize],
    workers: usize,
) -> usize {
    match (kind, inputs) {
        (OpKind::QuantConv2d(p), [x, w, ..]) => conv::scratch::<L>(p, x, w, output, workers),
        (OpKind::QuantFullyConnected(_), [_, w, ..]) => {
            fully_connected::scratch::<L>(w, output, workers)
        }
        _ => 0,
    }
}

#[cfg(all(test, feature = "std"))]
mod tests;
