//! Neural-network ops: Conv, ConvTranspose, Gemm, MatMul, Softmax/LogSoftmax, the reductions,
//! and the normalizations (Batch, Layer, Instance).

pub mod arg_reduce;
pub mod batch_norm;
pub mod conv;
pub mod conv_transpose;
pub mod gemm;
pub mod instance_norm;
pub mod layer_norm;
pub mod matmul;
pub mod reduce;
pub mod softmax;
