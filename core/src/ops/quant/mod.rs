//! Quantized (int8) reference kernels following the TFLite int8 spec: per-tensor asymmetric int8
//! activations, symmetric per-channel int8 weights, int32 biases, and requantization with a Q31
//! multiplier and shift computed by the converter.
//!
//! The arithmetic is TFLM's reference kernels', bit for bit (checked against TFLM's outputs by
//! `testkit/src/ops_int8/tflm.rs`): int32 accumulation of `w * (x - x_zero_point)`,
//! [`requant::multiply_by_quantized_multiplier`], the output zero point added, then a clamp to the fused
//! activation's int8 range (`act_min`, `act_max`; Relu and Relu6 are such clamps). Softmax is TFLM's
//! fixed-point algorithm. Only [`quantize`] and [`dequantize`] (the graph edges) use float. The
//! `from_scales` / `from_scale` constructors, [`requant::quantize_multiplier`],
//! [`requant::channel_multiplier`] and [`requant::activation_range`] are converter-side helpers that
//! derive the parameters from float scales exactly as TFLM's `Prepare` does.
//!
//! Where TFLM relies on C's undefined signed overflow (never in well-formed models), these kernels wrap
//! or saturate instead, and never panic.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/ops/quant");
