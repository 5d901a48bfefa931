//! Data movement and graph plumbing: Reshape, Flatten, Squeeze, Unsqueeze, Concat, Transpose, Pad,
//! Slice, Split, Gather, Expand, Tile, Resize/Upsample, DepthToSpace, SpaceToDepth, Identity and Dropout
//! (removed later), Where with a constant condition; and what is evaluated at conversion time: Constant, ConstantOfShape, Shape, Size,
//! Range, Cast.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/onnx/ops/array");
