//! The f32 kernels of each instruction-set level, as values ([`Level`]s): the generic kernels
//! (`gemm::tile`, `gemm::tile::gemv`, `gemm::dots`, `gemm::pack`, `ops::nn::depthwise`) instantiated for
//! the level's [`Lanes`](crate::gemm::lanes::Lanes) inside `#[target_feature]` functions, with the tile
//! shapes and blocking the GEMM uses there.
//!
//! Every function pointer here may use the level's instructions: the ops check
//! [`Isa::is_supported`](crate::Isa::is_supported) for `level.isa` before calling any (see
//! [`Level::runs_here`]).

use crate::level::Level;
use crate::Isa;

/// The kernels of a level, for its `Lanes` type (and, for the depthwise convolution's channels past the
/// last whole vector, a narrower one: `tail`, the same type by default): each function forwards to the
/// generic kernel inside a function that carries the level's target features (when it has any).
macro_rules! kernels {
    ($simd:ty $(, $feature:literal)?) => {
        kernels!($simd, tail = $simd $(, $feature)?);
    };
    ($simd:ty, tail = $tail:ty $(, $feature:literal)?) => {
        use crate::gemm::dots::DotsArgs;
        use crate::gemm::lanes::Lanes;
        use crate::gemm::tile::{GemvArgs, TileArgs};
        use crate::gemm::pack::Panel;
        use crate::level::{Level, TileKernel};
        use crate::ops::nn::depthwise::DepthwiseArgs;
        use crate::ops::nn::narrow::NarrowArgs;
        use crate::Isa;

        use super::Blocking;

        /// The level `isa`: these kernels, with the register `tiles`, the GEMM's `blocking`, and
        /// `dots` in blocks of `DR` rows by `DC` columns.
        pub(super) const fn level<const DR: usize, const DC: usize>(
            isa: Isa,
            tiles: &'static [TileKernel],
            blocking: Blocking,
        ) -> Level {
            Level {
                isa,
                lanes: <$simd as Lanes>::LANES,
                tiles,
                kc: blocking.kc,
                mc: blocking.mc,
                pack,
                gemv,
                dots: dots::<DR, DC>,
                dots_rows: DR,
                dots_cols: DC,
                dots_max_m: blocking.dots_max_m,
                dots_min_k: blocking.dots_min_k,
                depthwise,
                narrow,
            }
        }

        /// `tile::<MR, NV>` as a register tile (`MR` rows, `NV` vectors) of relative speed `speed`.
        pub(super) const fn tile_kernel<const MR: usize, const NV: usize>(
            speed: usize,
        ) -> TileKernel {
            TileKernel {
                mr: MR,
                nr: NV * <$simd as Lanes>::LANES,
                speed,
                run: tile::<MR, NV>,
            }
        }

        $(#[target_feature(enable = $feature)])?
        pub(super) unsafe fn pack(panel: Panel<'_>, out: &mut [f32]) {
            // SAFETY: the caller upholds `pack_panel`'s contract.
            unsafe { crate::gemm::pack::pack_panel::<$simd>(panel, out) }
        }

        $(#[target_feature(enable = $feature)])?
        pub(super) unsafe fn tile<const MR: usize, const NV: usize>(t: &TileArgs) {
            // SAFETY: the caller upholds `tile`'s contract (the level runs here, valid pointers).
            unsafe { crate::gemm::tile::tile::<$simd, MR, NV>(t) }
        }

        $(#[target_feature(enable = $feature)])?
        pub(super) unsafe fn dots<const MR: usize, const NW: usize>(d: &DotsArgs) {
            // SAFETY: the caller upholds `dots`'s contract.
            unsafe { crate::gemm::dots::dots::<$simd, MR, NW>(d) }
        }

        $(#[target_feature(enable = $feature)])?
        pub(super) unsafe fn gemv(g: &GemvArgs) {
            // SAFETY: the caller upholds `gemv`'s contract.
            unsafe { crate::gemm::tile::gemv::<$simd>(g) }
        }

        $(#[target_feature(enable = $feature)])?
        pub(super) unsafe fn depthwise(d: &DepthwiseArgs) {
            // SAFETY: the caller upholds `depthwise_row`'s contract.
            unsafe { crate::ops::nn::depthwise::depthwise_row::<$simd, $tail>(d) }
        }

        $(#[target_feature(enable = $feature)])?
        pub(super) unsafe fn narrow(d: &NarrowArgs) {
            // SAFETY: the caller upholds `narrow_row`'s contract.
            unsafe { crate::ops::nn::narrow::narrow_row::<$simd>(d) }
        }
    };
}

mod scalar {
    kernels!(crate::gemm::lanes::scalar::Scalar);
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    kernels!(crate::gemm::lanes::sse2::Sse2);
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    kernels!(crate::gemm::lanes::avx2::Avx2, "avx2,fma");
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    // Channels past the last 16 go 8 at a time: PP-OCR's depthwise layers have 8, 24, 40, 88, ...
    kernels!(
        crate::gemm::lanes::avx512::Avx512,
        tail = crate::gemm::lanes::avx2::Avx2,
        "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"
    );
}

#[cfg(target_arch = "aarch64")]
mod neon {
    kernels!(crate::gemm::lanes::neon::Neon);
}

/// The blocking of a level's GEMM (see the [`Level`] fields of the same names).
struct Blocking {
    kc: usize,
    mc: usize,
    dots_max_m: usize,
    dots_min_k: usize,
}

/// The blocking of the levels without fused multiply-add (scalar, SSE2): `dots` beats packing `B` for
/// any number of rows from 128 terms on.
const NO_FMA_BLOCKING: Blocking = Blocking {
    kc: 512,
    mc: 96,
    dots_max_m: usize::MAX,
    dots_min_k: 128,
};

/// The blocking of the levels with fused multiply-add (AVX2, NEON; AVX-512 with a smaller `kc`): there
/// packing `B` beats `dots` from 32 rows on, and under 256 terms.
const FMA_BLOCKING: Blocking = Blocking {
    dots_max_m: 32,
    dots_min_k: 256,
    ..NO_FMA_BLOCKING
};

/// Portable Rust; LLVM vectorizes its 4-lane arrays for the baseline.
pub(crate) static SCALAR: Level = scalar::level::<2, 4>(
    Isa::Scalar,
    &[
        scalar::tile_kernel::<8, 1>(80),
        scalar::tile_kernel::<6, 2>(100),
    ],
    NO_FMA_BLOCKING,
);

/// SSE2: 16 registers of 4 lanes; tiles of up to 12 accumulators.
#[cfg(target_arch = "x86_64")]
pub(crate) static SSE2: Level = sse2::level::<2, 6>(
    Isa::Sse2,
    &[
        sse2::tile_kernel::<8, 1>(70),
        sse2::tile_kernel::<6, 2>(100),
    ],
    NO_FMA_BLOCKING,
);

/// AVX2 + FMA: 16 registers of 8 lanes; 12 accumulators in the wide tiles.
#[cfg(target_arch = "x86_64")]
pub(crate) static AVX2: Level = avx2_level(Isa::Avx2);

/// The AVX-512 level's f32 GEMMs on a CPU that splits each 512-bit operation into two 256-bit halves
/// (AMD Zen 4): AVX2's tiles and blocking, which there do the same work per cycle without the 16-wide
/// tiles' padding (PP-OCRv4's detector: 4.2-4.3 ms against 4.8-4.9 ms on Zen 4; a 3x3 convolution
/// of 96 to 24 channels, `gemm_bench`: 92 against 73 GFLOP/s).
#[cfg(target_arch = "x86_64")]
pub(crate) static AVX512_HALF: Level = avx2_level(Isa::Avx512);

/// The AVX-512 level's f32 GEMM kernels for this CPU: [`AVX512`], or [`AVX512_HALF`] on a CPU whose
/// 512-bit operations are split in two (read once, with `std`; without it, [`AVX512`]).
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512() -> &'static Level {
    if crate::isa::splits_512_bit_ops() {
        &AVX512_HALF
    } else {
        &AVX512
    }
}

/// AVX2's kernels and blocking, run as the level `isa`.
#[cfg(target_arch = "x86_64")]
const fn avx2_level(isa: Isa) -> Level {
    const TILES: &[crate::level::TileKernel] =
        &[avx2::tile_kernel::<8, 1>(80), avx2::tile_kernel::<6, 2>(98)];
    avx2::level::<3, 4>(isa, TILES, FMA_BLOCKING)
}

/// AVX-512: 32 registers of 16 lanes.
#[cfg(target_arch = "x86_64")]
pub(crate) static AVX512: Level = Level {
    // AVX2's: one row against a weight matrix is bound by the loads, and the 16-lane version measured
    // half the speed (1024 x 1024 with `gemm_bench`: 52 vs 26 GFLOP/s on Zen 5).
    gemv: avx2::gemv,
    ..avx512::level::<3, 4>(
        Isa::Avx512,
        &[
            avx512::tile_kernel::<14, 1>(85),
            avx512::tile_kernel::<8, 2>(95),
            avx512::tile_kernel::<12, 2>(100),
        ],
        Blocking {
            kc: 256,
            ..FMA_BLOCKING
        },
    )
};

/// NEON: 32 registers of 4 lanes.
#[cfg(target_arch = "aarch64")]
pub(crate) static NEON: Level = neon::level::<4, 4>(
    Isa::Neon,
    &[
        neon::tile_kernel::<8, 1>(70),
        neon::tile_kernel::<8, 2>(90),
        neon::tile_kernel::<6, 4>(100),
    ],
    FMA_BLOCKING,
);
