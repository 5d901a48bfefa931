//! Reference kernels: plain functions over slices, one file per op, grouped by family
//! (`nn`, `math`, `pool`, `array`). Each op has a `Params` struct (from the blob), a `validate` function
//! that checks every shape the kernel relies on, and the kernel itself. A kernel never panics on inputs
//! that passed `validate`, and never allocates.

pub mod array;
pub mod math;
pub mod nn;
pub mod pool;
mod shape;

/// Largest tensor rank Ember supports.
pub const MAX_RANK: usize = 6;

/// A read-only f32 tensor handed to a kernel: row-major data and its dimensions (NHWC for 4-D activations).
#[derive(Clone, Copy, Debug)]
pub struct In<'a> {
    /// Row-major elements; `data.len()` equals the product of `dims`.
    pub data: &'a [f32],
    /// Dimensions, outermost first.
    pub dims: &'a [usize],
}

/// A writable f32 tensor handed to a kernel.
#[derive(Debug)]
pub struct Out<'a> {
    /// Row-major elements; `data.len()` equals the product of `dims`.
    pub data: &'a mut [f32],
    /// Dimensions, outermost first.
    pub dims: &'a [usize],
}

/// Number of elements of a shape (1 for a scalar).
pub fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}
