//! The AVX-512 level's int8 kernels: AVX2's, except that the GEMM tile multiplies a pair of inputs by
//! all 16 channels of a packed block with one AVX-512 VNNI `vpdpwssd` (int16 pairs multiplied, summed
//! and added to int32 lanes), where AVX2 needs two `vpmaddwd` and two `vpaddd`.
//!
//! The packed weights, the widened inputs and the output stage are AVX2's, and `vpdpwssd` computes
//! exactly `vpmaddwd` followed by `vpaddd` (both wrap; neither saturates), so the output bytes are
//! AVX2's, which are the reference kernels'. The matrix-vector and depthwise kernels are AVX2's.
//!
//! Reached only through [`Avx512`], which only the AVX-512 kernel table uses; `Isa` hands that table
//! out only on CPUs with AVX-512 F/BW/DQ/VL and VNNI (which include AVX2).

use core::arch::x86_64::*;

use super::avx2::{gemm_rounding, Avx2, GemmTile, MR};
use crate::ops::quant::{DwPixel, GemvRow, Level, Tile};

/// The AVX-512 level (see the module documentation).
pub(crate) struct Avx512;

impl Level for Avx512 {
    const GEMM_NAME: &'static str = "avx512vnni-int8-gemm";
    const GROUPED_NAME: &'static str = Avx2::GROUPED_NAME;
    shared_level_items!();

    fn gemm_pack(w: &[i8], n: usize, k: usize, out: &mut [i16]) {
        Avx2::gemm_pack(w, n, k, out)
    }
    fn gemm(t: Tile<'_>) {
        // SAFETY: this level's kernels run only from the AVX-512 table, which `Isa` hands out only on
        // CPUs with AVX-512 (F, BW, DQ, VL), VNNI and AVX2.
        unsafe { gemm_rounding::<Dpwssd>(t) }
    }
    fn gemv(g: GemvRow<'_>) {
        Avx2::gemv(g)
    }
    fn depthwise(px: DwPixel<'_>) {
        Avx2::depthwise(px)
    }
}

/// The VNNI tile (see the module documentation).
struct Dpwssd;

impl GemmTile for Dpwssd {
    unsafe fn tile<const R: usize>(a: *const i16, w: *const i16, kp: usize) -> [[__m256i; 2]; R] {
        // SAFETY: the caller's contract (valid rows and block, a CPU with AVX-512 VNNI).
        unsafe { tile::<R>(a, w, kp) }
    }
}

/// `R` rows x 16 channels, one 512-bit accumulator per row, split into AVX2's two halves at the end.
///
/// # Safety
/// `a` must hold `R` rows of `kp` int16 and `w` `kp / 2` pairs of 16 channels x 2 int16; the CPU must
/// have AVX-512 F and VNNI.
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn tile<const R: usize>(a: *const i16, w: *const i16, kp: usize) -> [[__m256i; 2]; R] {
    let mut acc = [_mm512_setzero_si512(); R];
    for j in 0..kp / 2 {
        // SAFETY: pair `j < kp / 2` of the block: 32 int16 at `32 * j` (the caller's contract); the
        // first 8 int32 lanes are channels 0-7, the next 8 channels 8-15, as AVX2 loads them.
        let wv = unsafe { _mm512_loadu_si512(w.add(32 * j).cast()) };
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: elements `2j, 2j + 1` of row `r < R`, inside the caller's `R` rows of `kp`.
            let pair = unsafe { a.add(r * kp + 2 * j).cast::<i32>().read_unaligned() };
            *acc = _mm512_dpwssd_epi32(*acc, _mm512_set1_epi32(pair), wv);
        }
    }
    acc.map(|v| [_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v)])
}
