//! What an instruction-set level supplies to the f32 drivers (the GEMM, the depthwise convolution):
//! [`Level`], its kernels as function pointers (each signature declared beside its kernel) and the tile
//! shapes and blocking the GEMM uses with them. The values, one per level, are in [`crate::levels`].
//!
//! Every function pointer of a `Level` may use the level's instructions: the ops check
//! [`Isa::is_supported`](crate::Isa::is_supported) for `level.isa` before calling any (see
//! [`Level::runs_here`]).

use crate::gemm::dots::DotsFn;
use crate::gemm::pack::PackFn;
use crate::gemm::tile::{GemvFn, TileFn};
use crate::ops::nn::depthwise::DepthwiseFn;
use crate::ops::nn::narrow::NarrowFn;
use crate::Isa;

/// One register tile shape.
#[derive(Debug)]
pub(crate) struct TileKernel {
    /// Rows.
    pub mr: usize,
    /// Columns (a multiple of the level's lanes).
    pub nr: usize,
    /// Multiply-adds per unit of time, relative to the level's other tiles (for choosing): what the
    /// loads per multiply-add and the accumulators (latency hiding) allow, checked with `gemm_bench`.
    pub speed: usize,
    /// The kernel.
    pub run: TileFn,
}

/// The f32 kernels of one level.
#[derive(Debug)]
pub(crate) struct Level {
    /// The level: its kernels run only where `isa.is_supported()`.
    pub isa: Isa,
    /// f32 per vector.
    pub lanes: usize,
    /// Register tiles, narrowest first (the GEMM picks one for the bulk of `N` and the narrowest that
    /// covers the remainder for the last panel).
    pub tiles: &'static [TileKernel],
    /// Block of `k` (the part of a packed panel that stays in L1: 512 x 16 values, 32 KiB, for AVX2's
    /// 6x16). Measured on Zen 3 with `gemm_bench`: 512 beats 128 by 3-8% on K = 480 and 864, and more
    /// (768, 1024) changes nothing measurable.
    pub kc: usize,
    /// Block of rows (the part of `A` that stays in L2). 48 to 192 measured alike on Zen 3 (512 KiB L2).
    pub mc: usize,
    /// Packing of `B`.
    pub pack: PackFn,
    /// Dot products for one row.
    pub gemv: GemvFn,
    /// Blocks of dot products, `dots_rows x dots_cols`, for GEMMs with `B` by columns, at most
    /// `dots_max_m` rows and at least `dots_min_k` terms per dot product.
    pub dots: DotsFn,
    /// Rows of `A` per block of `dots`.
    pub dots_rows: usize,
    /// Rows of `W` per block of `dots`.
    pub dots_cols: usize,
    /// Most rows of `A` for which `dots` beats packing `B`.
    pub dots_max_m: usize,
    /// Fewest terms per dot product for which `dots` beats packing `B` (the sums across lanes at the
    /// end cost the same whatever `k`).
    pub dots_min_k: usize,
    /// Depthwise convolution of one output row.
    pub depthwise: DepthwiseFn,
    /// Convolution with few output channels, one output row (vectors along the row).
    pub narrow: NarrowFn,
}

impl Level {
    /// Whether this CPU runs the level's instructions (an op falls back to the reference kernel
    /// otherwise, so that a table handed out for the wrong CPU is slow, never unsound).
    pub(crate) fn runs_here(&self) -> bool {
        self.isa.is_supported()
    }
}
