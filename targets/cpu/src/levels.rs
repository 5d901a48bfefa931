//! The f32 kernels of each instruction-set level, as values ([`Level`]s): the generic kernels
//! (`gemm::tile`, `gemm::tile::gemv`, `gemm::dots`, `gemm::pack`, `ops::nn::depthwise`) instantiated for
//! the level's [`Lanes`](crate::gemm::lanes::Lanes) inside `#[target_feature]` functions, with the tile
//! shapes and blocking the GEMM uses there.
//!
//! Every function pointer here may use the level's instructions: the ops check
//! [`Isa::is_supported`](crate::Isa::is_supported) for `level.isa` before calling any (see
//! [`Level::runs_here`]).

use crate::level::{Level, TileKernel};
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
        use crate::gemm::tile::{GemvArgs, TileArgs};
        use crate::gemm::BMat;
        use crate::ops::nn::depthwise::DepthwiseArgs;
        use crate::ops::nn::narrow::NarrowArgs;

        $(#[target_feature(enable = $feature)])?
        pub(super) unsafe fn pack(
            b: BMat<'_>,
            k: usize,
            j0: usize,
            valid: usize,
            width: usize,
            out: &mut [f32],
        ) {
            // SAFETY: the caller upholds `pack_panel`'s contract.
            unsafe { crate::gemm::pack::pack_panel::<$simd>(b, k, j0, valid, width, out) }
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

// `gemv` is left unused: the level takes AVX2's (see `AVX512`).
#[cfg(target_arch = "x86_64")]
#[allow(dead_code)]
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

/// Portable Rust; LLVM vectorizes its 4-lane arrays for the baseline.
pub(crate) static SCALAR: Level = Level {
    isa: Isa::Scalar,
    lanes: 4,
    tiles: &[
        TileKernel {
            mr: 8,
            nr: 4,
            speed: 80,
            run: scalar::tile::<8, 1>,
        },
        TileKernel {
            mr: 6,
            nr: 8,
            speed: 100,
            run: scalar::tile::<6, 2>,
        },
    ],
    kc: 512,
    mc: 96,
    pack: scalar::pack,
    gemv: scalar::gemv,
    dots: scalar::dots::<2, 4>,
    dots_rows: 2,
    dots_cols: 4,
    dots_max_m: usize::MAX,
    dots_min_k: 128,
    depthwise: scalar::depthwise,
    narrow: scalar::narrow,
};

/// SSE2: 16 registers of 4 lanes; tiles of up to 12 accumulators.
#[cfg(target_arch = "x86_64")]
pub(crate) static SSE2: Level = Level {
    isa: Isa::Sse2,
    lanes: 4,
    tiles: &[
        TileKernel {
            mr: 8,
            nr: 4,
            speed: 70,
            run: sse2::tile::<8, 1>,
        },
        TileKernel {
            mr: 6,
            nr: 8,
            speed: 100,
            run: sse2::tile::<6, 2>,
        },
    ],
    kc: 512,
    mc: 96,
    pack: sse2::pack,
    gemv: sse2::gemv,
    dots: sse2::dots::<2, 6>,
    dots_rows: 2,
    dots_cols: 6,
    dots_max_m: usize::MAX,
    dots_min_k: 128,
    depthwise: sse2::depthwise,
    narrow: sse2::narrow,
};

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
    Level {
        isa,
        lanes: 8,
        tiles: &[
            TileKernel {
                mr: 8,
                nr: 8,
                speed: 80,
                run: avx2::tile::<8, 1>,
            },
            TileKernel {
                mr: 6,
                nr: 16,
                speed: 98,
                run: avx2::tile::<6, 2>,
            },
        ],
        kc: 512,
        mc: 96,
        pack: avx2::pack,
        gemv: avx2::gemv,
        dots: avx2::dots::<3, 4>,
        dots_rows: 3,
        dots_cols: 4,
        dots_max_m: 32,
        dots_min_k: 256,
        depthwise: avx2::depthwise,
        narrow: avx2::narrow,
    }
}

/// AVX-512: 32 registers of 16 lanes.
#[cfg(target_arch = "x86_64")]
pub(crate) static AVX512: Level = Level {
    isa: Isa::Avx512,
    lanes: 16,
    tiles: &[
        TileKernel {
            mr: 14,
            nr: 16,
            speed: 85,
            run: avx512::tile::<14, 1>,
        },
        TileKernel {
            mr: 8,
            nr: 32,
            speed: 95,
            run: avx512::tile::<8, 2>,
        },
        TileKernel {
            mr: 12,
            nr: 32,
            speed: 100,
            run: avx512::tile::<12, 2>,
        },
    ],
    kc: 256,
    mc: 96,
    pack: avx512::pack,
    // AVX2's: one row against a weight matrix is bound by the loads, and the 16-lane version measured
    // half the speed (1024 x 1024 with `gemm_bench`: 52 vs 26 GFLOP/s on Zen 5).
    gemv: avx2::gemv,
    dots: avx512::dots::<3, 4>,
    dots_rows: 3,
    dots_cols: 4,
    dots_max_m: 32,
    dots_min_k: 256,
    depthwise: avx512::depthwise,
    narrow: avx512::narrow,
};

/// NEON: 32 registers of 4 lanes.
#[cfg(target_arch = "aarch64")]
pub(crate) static NEON: Level = Level {
    isa: Isa::Neon,
    lanes: 4,
    tiles: &[
        TileKernel {
            mr: 8,
            nr: 4,
            speed: 70,
            run: neon::tile::<8, 1>,
        },
        TileKernel {
            mr: 8,
            nr: 8,
            speed: 90,
            run: neon::tile::<8, 2>,
        },
        TileKernel {
            mr: 6,
            nr: 16,
            speed: 100,
            run: neon::tile::<6, 4>,
        },
    ],
    kc: 512,
    mc: 96,
    pack: neon::pack,
    gemv: neon::gemv,
    dots: neon::dots::<4, 4>,
    dots_rows: 4,
    dots_cols: 4,
    dots_max_m: 32,
    dots_min_k: 256,
    depthwise: neon::depthwise,
    narrow: neon::narrow,
};
