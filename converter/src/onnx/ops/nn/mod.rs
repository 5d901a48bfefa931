//! Neural-network ops: Conv, Gemm, MatMul, Softmax/LogSoftmax, the reductions, and the
//! normalizations (Batch, Layer, Instance).

pub mod batch_norm;
pub mod conv;
pub mod gemm;
pub mod instance_norm;
pub mod layer_norm;
pub mod matmul;
pub mod reduce;
pub mod softmax;
