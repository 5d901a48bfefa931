//! Reference kernels: plain functions over slices, one file per op, grouped by family
//! (`nn`, `math`, `pool`, `array`, `quant`). Each op has a `Params` struct (the blob's, defined in
//! [`crate::schema`] and re-exported by the op's file), a `validate` function that checks every shape the
//! kernel relies on, and the kernel itself. A kernel never panics on inputs that passed `validate`, and
//! never allocates.

pub mod array;
pub mod control;
pub mod element;
pub mod entry;
pub mod math;
pub mod nn;
pub mod pool;
pub mod quant;
pub(crate) mod shape;

pub use crate::schema::MAX_RANK;

/// A read-only tensor handed to a kernel: row-major data and its dimensions (NHWC for 4-D activations).
/// The element type defaults to `f32`; integer, boolean (`u8` 0/1) and quantized (`i8`) kernels name theirs.
#[derive(Clone, Copy, Debug)]
pub struct In<'a, T = f32> {
    /// Row-major elements; `data.len()` equals the product of `dims`.
    pub data: &'a [T],
    /// Dimensions, outermost first.
    pub dims: &'a [usize],
}

/// A writable tensor handed to a kernel (element type as for [`In`]).
#[derive(Debug)]
pub struct Out<'a, T = f32> {
    /// Row-major elements; `data.len()` equals the product of `dims`.
    pub data: &'a mut [T],
    /// Dimensions, outermost first.
    pub dims: &'a [usize],
}

/// Number of elements of a shape (1 for a scalar).
pub fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}
