//! Element-wise math: broadcasting binary ops and unary ops.

pub(crate) mod binary;
pub(crate) mod unary;
