//! Neural-network ops: convolutions, fully connected, matrix products, softmax, layer normalization,
//! reductions, recurrent layers.

pub(crate) mod conv;
pub(crate) mod conv_transpose;
pub(crate) mod depthwise;
pub(crate) mod fully_connected;
pub(crate) mod layer_norm;
pub(crate) mod matmul;
pub(crate) mod narrow;
pub(crate) mod reduce;
pub(crate) mod rnn;
pub(crate) mod softmax;
pub(crate) mod tensors;

use ember_core::ops::nn::conv::Conv2dFn;
use ember_core::ops::nn::conv_transpose::ConvTranspose2dFn;
use ember_core::ops::nn::fully_connected::FullyConnectedFn;
use ember_core::ops::nn::matmul::MatMulFn;
use ember_core::ops::Out;
use ember_core::{Parallel, Workspace};

use crate::level::Level;
use crate::scratch::Carve;
pub(crate) use tensors::Tensors;

/// The GEMM-based table entries (convolutions, fully connected, matmul) of one level: this crate's
/// kernels run with that level's [`Level`].
pub(crate) struct GemmEntries {
    /// `Kernels::conv2d`.
    pub conv2d: Conv2dFn,
    /// `Kernels::conv_transpose2d`.
    pub conv_transpose2d: ConvTranspose2dFn,
    /// `Kernels::fully_connected`.
    pub fully_connected: FullyConnectedFn,
    /// `Kernels::matmul`.
    pub matmul: MatMulFn,
}

/// The [`GemmEntries`] of the level `$level` (a `&'static Level`).
macro_rules! gemm_entries {
    ($level:expr) => {
        GemmEntries {
            conv2d: |p, x, w, b, y, ws| conv::conv2d($level, p, Tensors { x, w, b }, y, ws),
            conv_transpose2d: |p, x, w, b, y, ws| {
                conv_transpose::conv_transpose2d($level, p, Tensors { x, w, b }, y, ws)
            },
            fully_connected: |p, x, w, b, y, ws| {
                fully_connected::fully_connected($level, p, Tensors { x, w, b }, y, ws)
            },
            matmul: |p, a, b, y, ws| matmul::matmul($level, p, a, b, y, ws),
        }
    };
}

/// The scalar level's GEMM-based entries.
pub(crate) const SCALAR: GemmEntries = gemm_entries!(&crate::levels::SCALAR);
/// SSE2's GEMM-based entries.
#[cfg(target_arch = "x86_64")]
pub(crate) const SSE2: GemmEntries = gemm_entries!(&crate::levels::SSE2);
/// AVX2's GEMM-based entries.
#[cfg(target_arch = "x86_64")]
pub(crate) const AVX2: GemmEntries = gemm_entries!(&crate::levels::AVX2);
/// AVX-512's GEMM-based entries (with the f32 kernels for this CPU, see `levels::avx512`).
#[cfg(target_arch = "x86_64")]
pub(crate) const AVX512: GemmEntries = gemm_entries!(crate::levels::avx512());
/// NEON's GEMM-based entries.
#[cfg(target_arch = "aarch64")]
pub(crate) const NEON: GemmEntries = gemm_entries!(&crate::levels::NEON);

/// Runs a GEMM-based op with `level`'s kernels: `run(workers, y, scratch, parallel)` for the session's
/// workers, then for one (the table's scratch function may have sized the scratch for one), until
/// one has the scratch it needs; else, and where the level does not run on this CPU or there is no
/// workspace, the reference kernel `reference(y)`. An empty output is done already.
#[inline]
pub(crate) fn run_or_fall_back<'y>(
    level: &Level,
    y: Out<'y>,
    ws: Option<&mut Workspace<'_>>,
    mut run: impl FnMut(usize, Out<'_>, &mut Carve<'_>, Option<&dyn Parallel>) -> bool,
    reference: impl FnOnce(Out<'y>),
) {
    if y.data.is_empty() {
        return;
    }
    if let (true, Some(ws)) = (level.runs_here(), ws) {
        for workers in [ws.workers(), 1] {
            let attempt = Out {
                data: &mut *y.data,
                dims: y.dims,
            };
            if run(workers, attempt, &mut Carve::new(ws.scratch), ws.parallel) {
                return;
            }
        }
    }
    crate::ops::fell_back();
    reference(y)
}
