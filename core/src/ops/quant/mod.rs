//! Quantized (int8) reference kernels following the TFLite int8 spec: per-tensor asymmetric int8
//! activations, symmetric per-channel int8 weights, int32 biases, and requantization with a Q31
//! multiplier and shift computed by the converter.
