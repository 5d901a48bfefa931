//! The operator versions Ember's TFLite importer reads: for each builtin operator that
//! [`super::ops`] imports, the highest version whose meaning the importer handles.
//!
//! **Where the versions come from.** Each operator code of a `.tflite` carries a version next to
//! its builtin op. The TFLite converter writes it with `GetBuiltinOperatorVersion`
//! (`tensorflow/lite/tools/versioning/op_version.cc`; LiteRT's copy is
//! `tflite/tools/versioning/op_version.cc`): each version names a feature the op gained (an element
//! type, an option, a rank), and the function returns the version of the first feature the operator
//! uses, testing them from the newest down. The versions and features below were read from that
//! function; LiteRT's copy adds FULLY_CONNECTED 13, TRANSPOSE 7 and PAD/PADV2 5, named in the
//! comments too. Runtimes register a range of versions per op and refuse a model outside it.
//!
//! **The rule.** An operator whose version is above [`max_version`] is refused, and the error names
//! the op, its version and the operator's index. Refused too: a version TFLite had not assigned
//! when this table was written (its meaning is unknown), and a next version that only adds an
//! element type Ember refuses anyway (int16, int4, uint32, strings), so the error says which op
//! stopped the import rather than which tensor.
//!
//! **What the table does not do.** Versions are ordered by when TFLite added a feature, not by what
//! Ember supports: a feature Ember lacks can have a version below one it supports (CONV_2D 2 is
//! hybrid, float activations with int8 filters, and 6 a grouped convolution), and int16 or uint8
//! operators often keep a low version (a uint8 CONV_2D is version 1). A version at or below the
//! maximum still goes through the importer's checks on element types and options (shuffled
//! FULLY_CONNECTED weights, STRIDED_SLICE's ellipsis and new-axis masks, GATHER's `batch_dims`,
//! sparse tensors); the comments name the features below the maximum that rely on them.

use super::schema::BuiltinOperator;

/// The highest version of `op` whose features Ember's importer handles, or None for an op it does
/// not import.
pub(crate) fn max_version(op: BuiltinOperator) -> Option<i32> {
    let v = match op {
        // 1 float, 3 int8 (per-channel filters), 6 grouped convolution (input channels a multiple
        // of the filter's). Next: 7, int4 filters. Below 6 and left to the importer's checks:
        // 2 and 5 (hybrid: float activations, int8 filters), 4 (int16 activations).
        BuiltinOperator::Conv2d => 6,
        // 1 float, 2 dilation, 3 int8. Next: 4, hybrid (float activations, int8 filters).
        BuiltinOperator::DepthwiseConv2d => 3,
        // 1 float, 2 int8 filters, 3 a bias input, 4 a fused activation. Next: 5, int16 activations
        // with `quantized_bias_type`.
        BuiltinOperator::TransposeConv => 4,
        // 1 float, 4 int8, 5 `keep_num_dims`, 6 no bias (two inputs). Next: 7, int16 activations
        // and weights (then 8 sparse weights, 9 asymmetric hybrid, 10 int4 weights, 11 int16 with
        // `quantized_bias_type`, 12 per-channel hybrid, 13 int16 with int4 weights). Below 6:
        // 2 (shuffled weights, which the importer refuses) and 3 (hybrid, left to its checks).
        BuiltinOperator::FullyConnected => 6,
        // 1 float, 2 int8. Next: 3, int16.
        BuiltinOperator::AveragePool2d | BuiltinOperator::MaxPool2d => 2,
        // 1 float and int32, 2 int8. Next: 3, int16 with general scales (4 int64, 5 int16 without
        // quantization).
        BuiltinOperator::Add => 2,
        // 1 float and int32, 2 int8, 3 broadcasting inputs of rank above 4 (Ember broadcasts up to
        // rank 6). Next: 4, int64.
        BuiltinOperator::Sub => 3,
        // 1 float and int32, 2 int8, 3 int8 with `input1_scale * input2_scale / output_scale >= 1`
        // (a multiplier with a left shift, which Ember's requantization takes). Next: 4, int16.
        BuiltinOperator::Mul => 3,
        // 1 float, 2 broadcasting inputs of rank above 4. TFLite assigns no version 3.
        BuiltinOperator::Div => 2,
        // 1 float, 2 int8, 3 broadcasting inputs of rank above 4. Next: 4, int16.
        BuiltinOperator::Maximum | BuiltinOperator::Minimum => 3,
        // 1 float and int8. TFLite assigns no version 2.
        BuiltinOperator::Prelu => 1,
        // 1 float, 2 int8. TFLite assigns no version 3.
        BuiltinOperator::SquaredDifference => 2,
        // 1 float, 2 int8 (uint8 too). Next: 3, int16.
        BuiltinOperator::Relu => 2,
        // 1 float, 2 int8. Next: 3, int16.
        BuiltinOperator::Relu6 => 2,
        // 1 float. TFLite assigns no version 2.
        BuiltinOperator::ReluN1To1 => 1,
        // 1 float, 2 int8. Next: 3, int16.
        BuiltinOperator::Logistic | BuiltinOperator::Tanh => 2,
        // 1 float and int8. TFLite assigns no version 2.
        BuiltinOperator::HardSwish => 1,
        // 1 float and int8. Next: 2, int16.
        BuiltinOperator::LeakyRelu => 1,
        // 1 float and int8. TFLite assigns no version 2.
        BuiltinOperator::Elu => 1,
        // 1 float, 2 int8 (uint8 too). TFLite assigns no version 3.
        BuiltinOperator::Gelu => 2,
        // 1 float, 2 int8 (int16 too, left to the element-type checks). No version 3.
        BuiltinOperator::Exp | BuiltinOperator::Log => 2,
        // 1 float. TFLite assigns no version 2.
        BuiltinOperator::Sqrt => 1,
        // 1 float, 2 int8. Next: 3, int16.
        BuiltinOperator::Rsqrt => 2,
        // 1 float, 2 int8 (uint8 too). Next: 3, quantized int16 (4 int16 without quantization,
        // 5 int32).
        BuiltinOperator::Abs => 2,
        // 1, whatever the element type. TFLite assigns no version 2.
        BuiltinOperator::Neg => 1,
        // 1 only: TFLite assigns these no other version.
        BuiltinOperator::Sin
        | BuiltinOperator::Cos
        | BuiltinOperator::Floor
        | BuiltinOperator::Ceil
        | BuiltinOperator::Round
        | BuiltinOperator::Square
        | BuiltinOperator::Pow => 1,
        // 1 float, int32 and int64. Next: 2, int8 and int16, which TFLite computes on the raw
        // integers (no scales) where Ember would read int8 as quantized.
        BuiltinOperator::FloorMod => 1,
        // 1 only, whatever the element type.
        BuiltinOperator::Reshape | BuiltinOperator::ExpandDims => 1,
        // 1. Next: 2, strings.
        BuiltinOperator::Squeeze => 1,
        // 1 float, 2 int8. Next: 3, int16.
        BuiltinOperator::Softmax => 2,
        // 1 float, 2 int8. TFLite assigns no version 3.
        BuiltinOperator::LogSoftmax => 2,
        // 1 float, 2 int8, 4 rank above 4 (Ember pads up to rank 6). Next: 5, bool (LiteRT).
        // Below 4: 3 (int16), left to the element-type checks.
        BuiltinOperator::Pad | BuiltinOperator::Padv2 => 4,
        // 1 float and int32, 2 int8. Next: 3, int16 (4 uint32).
        BuiltinOperator::Concatenation => 2,
        // 1 float and int32, 2 int8. Next: 3, int16 (4 uint32).
        BuiltinOperator::Pack => 2,
        // 1 float, 2 int8 (uint8 too), 3 bool. Next: 4, int16.
        BuiltinOperator::Unpack => 3,
        // 1 float, 2 int8, 3 int32. Next: 4, int16.
        BuiltinOperator::Split => 3,
        // 1 float, 2 int8. TFLite assigns no version 3.
        BuiltinOperator::SplitV => 2,
        // 1 float, 2 int8, 5 rank above 4 (Ember slices up to rank 6). Next: 6, uint32. Below 5:
        // 3 (strings) and 4 (int16), left to the element-type checks.
        BuiltinOperator::Slice => 5,
        // 1 float, 2 int8, 3 bool, 4 rank above 4, 8 `offset` (the end relative to the begin).
        // TFLite assigns no version 9. Below 8: 5 (strings) and 7 (uint32), left to the
        // element-type checks, and 6 (`ellipsis_mask`, `new_axis_mask`), which the importer
        // refuses.
        BuiltinOperator::StridedSlice => 8,
        // 1 float, 2 int8. Next: 3, int16.
        BuiltinOperator::Mean | BuiltinOperator::ReduceMax | BuiltinOperator::ReduceMin => 2,
        // 1 float, 2 int8. TFLite assigns no version 3.
        BuiltinOperator::Sum => 2,
        // 1 float, 2 int8 (int16 too, left to the element-type checks). No version 3.
        BuiltinOperator::ReduceProd => 2,
        // 1 float to int8, and int8 to int8 (a requantization). Next: 2, int16 output (3 an output
        // quantized per channel, 4 int4).
        BuiltinOperator::Quantize => 1,
        // 2 int8, 3 FLOAT16 (widened at conversion; int16 too, left to the element-type checks),
        // 5 int8 quantized per channel (a constant, dequantized at conversion; a per-channel
        // activation is refused by the importer). Version 4 came with TFLite 2.2 and is assigned by
        // no current GetBuiltinOperatorVersion. Next: 6, int4.
        BuiltinOperator::Dequantize => 5,
        // 1 float, 2 int8, 3 `half_pixel_centers`. Next: 4, int16.
        BuiltinOperator::ResizeBilinear => 3,
        // 1 float, 2 int8, 3 `half_pixel_centers` or `align_corners`. Next: 4, int16.
        BuiltinOperator::ResizeNearestNeighbor => 3,
        // 1 float, 2 int8, 3 bool, 4 rank 5, 6 rank above 5 (Ember's ranks end at 6). Next: 7,
        // int4 (LiteRT). Below 6: 5 (int16), left to the element-type checks.
        BuiltinOperator::Transpose => 6,
        // 1 float, 2 int8, 3 bool. Next: 4, int16 (5 `batch_dims`, which the importer refuses,
        // 6 int16 indices, 7 int4).
        BuiltinOperator::Gather => 3,
        // 1 float, 2 int8. Next: 3, int16 (4 asymmetric hybrid). Hybrid without asymmetric
        // quantization keeps version 1, left to the importer's checks.
        BuiltinOperator::BatchMatmul => 2,
        // 1 between float, int32, int64, bool (and the types the element-type checks refuse, int16
        // among them). Next: 2, uint32 (refused by the element-type checks anyway), then 3 int8
        // (cast as raw integers), 4 uint16, 5 float16 and float64, 6 int4, 7 bfloat16.
        BuiltinOperator::Cast => 1,
        // 1 float, 2 int8. Next: 3, bool input.
        BuiltinOperator::ArgMax | BuiltinOperator::ArgMin => 2,
        // 1 float and integers, 2 int8. Next: 3, strings (EQUAL 4 int16).
        BuiltinOperator::Equal | BuiltinOperator::NotEqual => 2,
        // 1 float and integers, 2 int8. Next: 3, int16.
        BuiltinOperator::Less | BuiltinOperator::GreaterEqual => 2,
        // 1 float and integers, 2 int8. TFLite assigns no version 3.
        BuiltinOperator::Greater | BuiltinOperator::LessEqual => 2,
        // 1 only: bool. TFLite assigns no version 2.
        BuiltinOperator::LogicalAnd | BuiltinOperator::LogicalOr | BuiltinOperator::LogicalNot => 1,
        // 1 float, 2 int8, 3 rank 5. Next: 4, uint32.
        BuiltinOperator::Select => 3,
        // 1. Next: 2, uint32.
        BuiltinOperator::SelectV2 => 1,
        // 1 only (a constant: shapes are static). TFLite assigns no version 2.
        BuiltinOperator::Shape => 1,
        // 2 float (its first version: version 1 was withdrawn with its op code), 3 int8 (int16 too,
        // left to the element-type checks). TFLite assigns no version 4.
        BuiltinOperator::BroadcastTo => 3,
        // 1 float. Next: 2, hybrid (float activations, int8 weights), then 3 asymmetric hybrid,
        // 4 `diagonal_recurrent_tensors`, 5 int16 activations.
        BuiltinOperator::UnidirectionalSequenceLstm => 1,
        _ => return None,
    };
    Some(v)
}
