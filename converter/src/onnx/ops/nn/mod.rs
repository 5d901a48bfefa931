//! Neural-network ops: Conv, Gemm, MatMul, Softmax.

pub mod conv;
pub mod gemm;
pub mod matmul;
pub mod softmax;
