//! The `#[cube]` kernels of the f32 and int8 op sets, by family (as in `ember_core::ops`). Each file also holds
//! the layout of the `meta` buffer its kernels read, which `crate::gpu::lower` fills.

/// Largest tensor rank; sets the layout of the kernels' `meta` buffers (which the lowering fills).
pub(crate) const MAX_RANK: usize = ember_core::ops::MAX_RANK;

pub(crate) mod array;
pub(crate) mod math;
pub(crate) mod nn;
pub(crate) mod pool;
pub(crate) mod quant;
