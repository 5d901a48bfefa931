//! Neural-network ops: convolution, fully connected, matrix multiply, softmax, reductions, layer
//! normalization.

pub mod conv;
pub mod fully_connected;
pub mod layer_norm;
pub mod matmul;
pub mod reduce;
pub mod softmax;
