//! The tensors of a convolution or fully connected layer: below the kernels and the level tables
//! that both name them.

use ember_core::ops::In;

/// The tensors of a convolution or fully connected layer, as its table entry gets them.
#[derive(Clone, Copy)]
pub(crate) struct Tensors<'a> {
    /// The input.
    pub x: In<'a>,
    /// The weights.
    pub w: In<'a>,
    /// The bias, one per output channel.
    pub b: Option<&'a [f32]>,
}
