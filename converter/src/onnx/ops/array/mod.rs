//! Data movement and graph plumbing: Reshape, Flatten, Squeeze, Unsqueeze, Concat, Transpose, Pad,
//! Slice, Split, Gather, Expand, Tile, Resize/Upsample, DepthToSpace, SpaceToDepth, Identity and Dropout
//! (removed later), Where with a constant condition; and what is evaluated at conversion time: Constant, ConstantOfShape, Shape, Size,
//! Range, Cast.

pub mod cast;
pub mod concat;
pub mod constant;
pub mod constant_of_shape;
pub mod depth_to_space;
pub mod expand;
pub mod flatten;
pub mod gather;
pub mod identity;
pub mod pad;
pub mod range;
pub mod reshape;
pub mod resize;
pub mod shape;
pub mod slice;
pub mod split;
pub mod squeeze;
pub mod transpose;
pub mod where_op;
