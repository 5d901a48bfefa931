//! Data movement and graph plumbing: Reshape, Flatten, Concat, Transpose, Pad, Identity and Dropout
//! (removed later), Constant.

pub mod concat;
pub mod constant;
pub mod flatten;
pub mod identity;
pub mod pad;
pub mod reshape;
pub mod transpose;
