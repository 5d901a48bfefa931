//! Neural-network ops: convolution, fully connected, matrix multiply, softmax, reductions, layer
//! normalization.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/ops/nn");
