//! This crate's kernels, one file per op mirroring `ember_core::ops` (`math/binary.rs` replaces
//! `ember_core::ops::math::binary::binary`, and so on), each with the reference kernel's signature and
//! one entry per instruction-set level (see [`crate::simd::per_level`]). Here: which table entries they
//! replace and how they are named in profiles, and the odometer that walks the outer axes of a tensor.

use ember_core::kernels::entry;
use ember_core::ops::MAX_RANK;
use ember_core::OpKind;

use crate::Isa;

pub(crate) mod array;
pub(crate) mod math;
pub(crate) mod nn;
pub(crate) mod pool;

/// The entries whose kernels this module replaces at every level.
pub(crate) const ENTRIES: u64 = entry::BINARY
    | entry::UNARY
    | entry::SOFTMAX
    | entry::LOG_SOFTMAX
    | entry::LAYER_NORM
    | entry::REDUCE
    | entry::MAX_POOL
    | entry::AVG_POOL
    | entry::GLOBAL_AVG_POOL
    | entry::TRANSPOSE;

/// The kernel that runs `kind` at `isa`, if it is one of this module's (`None` for other entries, and
/// for the cases its kernels hand to the reference kernel).
pub(crate) fn variant(isa: Isa, kind: &OpKind) -> Option<&'static str> {
    let vectorized = match kind {
        OpKind::Binary(p) => math::binary::is_vectorized(&p.op),
        OpKind::Unary(p) => math::unary::is_vectorized(&p.op),
        OpKind::Reduce(p) => nn::reduce::is_vectorized(p),
        OpKind::Softmax(_)
        | OpKind::LogSoftmax(_)
        | OpKind::LayerNorm(_)
        | OpKind::MaxPool2d(_)
        | OpKind::AvgPool2d(_)
        | OpKind::GlobalAvgPool => true,
        // The same tiled copy at every level.
        OpKind::Transpose(_) => return Some("tiled"),
        _ => false,
    };
    vectorized.then_some(match isa {
        Isa::Scalar => "scalar",
        Isa::Sse2 => "sse2",
        Isa::Avx2 => "avx2",
        Isa::Neon | Isa::NeonDotprod => "neon",
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
