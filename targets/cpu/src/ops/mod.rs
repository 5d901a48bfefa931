//! This crate's kernels, one file per op mirroring `ember_core::ops` (`math/binary.rs` replaces
//! `ember_core::ops::math::binary::binary`, and so on), each with the reference kernel's signature and
//! one entry per instruction-set level (see [`crate::simd::per_level`]; the GEMM-based ops of `nn/` take
//! a [`Level`](crate::level::Level) and get their entries from [`nn::GemmEntries`]). Here: which table entries they
//! replace and how they are named in profiles, and the odometer that walks the outer axes of a tensor.

use ember_core::kernels::entry;
use ember_core::ops::MAX_RANK;
use ember_core::OpKind;

use crate::Isa;

pub(crate) mod array;
pub(crate) mod math;
pub(crate) mod nn;
pub(crate) mod pool;
pub mod quant;
#[cfg(all(test, feature = "std"))]
mod tests;

/// The entries whose kernels this module replaces at the SIMD levels.
const ENTRIES: u64 = entry::BINARY
    | entry::UNARY
    | entry::SOFTMAX
    | entry::LOG_SOFTMAX
    | entry::LAYER_NORM
    | entry::REDUCE
    | entry::RNN
    | entry::MAX_POOL
    | entry::AVG_POOL
    | entry::GLOBAL_AVG_POOL
    | entry::RESIZE
    | entry::TRANSPOSE;

/// The entries of the scalar table: the portable kernels that beat the reference's (which the
/// compiler vectorizes where its loops are simple; see `examples/elementwise_bench.rs`).
const SCALAR_ENTRIES: u64 = entry::BINARY | entry::REDUCE | entry::RESIZE | entry::TRANSPOSE;

/// Whether `isa` is a SIMD level of the architecture this crate is compiled for (the other
/// architecture's levels have the scalar table's kernels, and are never handed out).
fn simd(isa: Isa) -> bool {
    match isa {
        Isa::Scalar => false,
        Isa::Sse2 | Isa::Avx2 | Isa::Avx512 => cfg!(target_arch = "x86_64"),
        Isa::Neon | Isa::NeonDotprod => cfg!(target_arch = "aarch64"),
    }
}

/// The entries whose kernels this module replaces in `isa`'s table.
pub(crate) fn entries(isa: Isa) -> u64 {
    if simd(isa) {
        ENTRIES
    } else {
        SCALAR_ENTRIES
    }
}

/// The kernel that runs `kind` at `isa`, if it is one of this module's (`None` for other entries, and
/// for the cases its kernels hand to the reference kernel).
pub(crate) fn variant(isa: Isa, kind: &OpKind) -> Option<&'static str> {
    let (bit, vectorized) = match kind {
        OpKind::Binary(p) => (entry::BINARY, math::binary::is_vectorized(&p.op)),
        OpKind::Unary(p) => (entry::UNARY, math::unary::is_vectorized(&p.op)),
        OpKind::Reduce(p) => (entry::REDUCE, nn::reduce::is_vectorized(p)),
        OpKind::Softmax(_) => (entry::SOFTMAX, true),
        OpKind::LogSoftmax(_) => (entry::LOG_SOFTMAX, true),
        OpKind::LayerNorm(_) => (entry::LAYER_NORM, true),
        OpKind::Rnn(_) => (entry::RNN, true),
        OpKind::MaxPool2d(_) => (entry::MAX_POOL, true),
        OpKind::AvgPool2d(_) => (entry::AVG_POOL, true),
        OpKind::GlobalAvgPool => (entry::GLOBAL_AVG_POOL, true),
        OpKind::Transpose(_) => (entry::TRANSPOSE, true),
        OpKind::Resize(_) => (entry::RESIZE, true),
        _ => (0, false),
    };
    if entries(isa) & bit == 0 || !vectorized {
        return None;
    }
    Some(match (kind, isa) {
        // The same tiled copy at every level.
        (OpKind::Transpose(_), _) => "tiled",
        // The same column table at every level.
        (OpKind::Resize(_), _) => "column table",
        _ if !simd(isa) => "scalar",
        (_, Isa::Sse2) => "sse2",
        // AVX-512's table keeps AVX2's element-wise kernels (they are bound by memory, not by lanes).
        (_, Isa::Avx2 | Isa::Avx512) => "avx2",
        _ => "neon",
    })
}

/// The indices of `dims` (`dims.len() < MAX_RANK`) in row-major order, as the offset
/// `sum(index[d] * strides[k][d])` in each of `K` tensors: one item (offsets 0) when `dims` is empty,
/// none when a dim is 0. An iterator rather than a function taking a closure: the loop body stays in
/// the kernel, where it is compiled with the level's target features (see [`crate::simd`]).
pub(crate) struct Odometer<'a, const K: usize> {
    dims: &'a [usize],
    strides: [[usize; MAX_RANK]; K],
    index: [usize; MAX_RANK],
    offsets: [usize; K],
    done: bool,
}

impl<'a, const K: usize> Odometer<'a, K> {
    /// Walks `dims` with `strides`.
    #[inline(always)]
    pub(crate) fn new(dims: &'a [usize], strides: [[usize; MAX_RANK]; K]) -> Self {
        Odometer {
            dims,
            strides,
            index: [0; MAX_RANK],
            offsets: [0; K],
            done: dims.contains(&0),
        }
    }
}

impl<const K: usize> Iterator for Odometer<'_, K> {
    type Item = [usize; K];

    #[inline(always)]
    fn next(&mut self) -> Option<[usize; K]> {
        if self.done {
            return None;
        }
        let current = self.offsets;
        // Bump the last axis, carrying into the earlier ones; past the first axis, the walk is over.
        let mut axis = self.dims.len();
        loop {
            if axis == 0 {
                self.done = true;
                break;
            }
            axis -= 1;
            self.index[axis] += 1;
            if self.index[axis] < self.dims[axis] {
                for (o, s) in self.offsets.iter_mut().zip(&self.strides) {
                    *o += s[axis];
                }
                break;
            }
            for (o, s) in self.offsets.iter_mut().zip(&self.strides) {
                *o -= s[axis] * (self.dims[axis] - 1);
            }
            self.index[axis] = 0;
        }
        Some(current)
    }
}

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
