//! Neural-network ops: convolutions, fully connected, matrix products, softmax, layer normalization,
//! reductions.

pub(crate) mod conv;
pub(crate) mod conv_transpose;
pub(crate) mod depthwise;
pub(crate) mod fully_connected;
pub(crate) mod layer_norm;
pub(crate) mod matmul;
pub(crate) mod narrow;
pub(crate) mod reduce;
pub(crate) mod softmax;
