//! Neural-network ops: convolution, fully connected, matrix multiply, softmax, reductions, layer
//! normalization.

pub mod arg_reduce;
pub mod conv;
pub mod conv_transpose;
pub mod fully_connected;
pub mod fully_connected_w8;
pub mod layer_norm;
pub mod matmul;
pub mod reduce;
pub mod softmax;
