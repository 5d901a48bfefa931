//! Neural-network ops: Conv, ConvTranspose, Gemm, MatMul, Softmax/LogSoftmax, the reductions,
//! and the normalizations (Batch, Layer, Instance).

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/onnx/ops/nn");
