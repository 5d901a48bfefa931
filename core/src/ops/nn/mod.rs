//! Neural-network ops: convolution, fully connected, matrix multiply, softmax.

pub mod conv;
pub mod fully_connected;
pub mod matmul;
pub mod softmax;
