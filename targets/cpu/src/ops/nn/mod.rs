//! Neural-network ops: softmax, layer normalization, reductions.

pub(crate) mod layer_norm;
pub(crate) mod reduce;
pub(crate) mod softmax;
