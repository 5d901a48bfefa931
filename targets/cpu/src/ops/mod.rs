//! This crate's kernels, one file per op under `<family>/<op>.rs` (mirroring `ember-core`'s
//! `ops/`), each generic over a [`Level`](crate::level::Level); [`kernels!`] makes the table entries of
//! one level, with the tables' signatures.

pub(crate) mod nn;
#[cfg(all(test, feature = "std"))]
mod tests;

#[cfg(all(test, feature = "std"))]
std::thread_local! {
    /// Reference kernels the ops of this thread fell back to (for tests).
    pub(crate) static FALLBACKS: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Notes that an op runs the reference kernel instead of this crate's (no workspace, too little
/// scratch, or a level this CPU lacks); tests count these.
#[inline]
pub(crate) fn fell_back() {
    #[cfg(all(test, feature = "std"))]
    FALLBACKS.with(|f| f.set(f.get() + 1));
}

/// The table entries of one level (`$level`, a `static Level`) in a module `$name`: plain functions with
/// the `Kernels` signatures that run this crate's kernels at that level.
macro_rules! entries {
    ($name:ident, $level:path) => {
        pub(crate) mod $name {
            use ember_core::ops::nn::conv::Conv2dParams;
            use ember_core::ops::nn::conv_transpose::ConvTranspose2dParams;
            use ember_core::ops::nn::fully_connected::FullyConnectedParams;
            use ember_core::ops::nn::matmul::MatMulParams;
            use ember_core::ops::{In, Out};
            use ember_core::Workspace;

            use crate::ops::nn;

            pub(crate) fn conv2d(
                p: &Conv2dParams,
                x: In<'_>,
                w: In<'_>,
                b: Option<&[f32]>,
                y: Out<'_>,
                ws: Option<&mut Workspace<'_>>,
            ) {
                nn::conv::conv2d(&$level, p, x, w, b, y, ws)
            }

            pub(crate) fn conv_transpose2d(
                p: &ConvTranspose2dParams,
                x: In<'_>,
                w: In<'_>,
                b: Option<&[f32]>,
                y: Out<'_>,
                ws: Option<&mut Workspace<'_>>,
            ) {
                nn::conv_transpose::conv_transpose2d(&$level, p, x, w, b, y, ws)
            }

            pub(crate) fn fully_connected(
                p: &FullyConnectedParams,
                x: In<'_>,
                w: In<'_>,
                b: Option<&[f32]>,
                y: Out<'_>,
                ws: Option<&mut Workspace<'_>>,
            ) {
                nn::fully_connected::fully_connected(&$level, p, x, w, b, y, ws)
            }

            pub(crate) fn matmul(
                p: &MatMulParams,
                a: In<'_>,
                b: In<'_>,
                y: Out<'_>,
                ws: Option<&mut Workspace<'_>>,
            ) {
                nn::matmul::matmul(&$level, p, a, b, y, ws)
            }
        }
    };
}

entries!(scalar, crate::level::SCALAR);
#[cfg(target_arch = "x86_64")]
entries!(sse2, crate::level::SSE2);
#[cfg(target_arch = "x86_64")]
entries!(avx2, crate::level::AVX2);
#[cfg(target_arch = "aarch64")]
entries!(neon, crate::level::NEON);
