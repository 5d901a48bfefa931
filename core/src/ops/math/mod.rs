//! Element-wise math: fused activations, unary and broadcasting binary ops.

pub mod activation;
pub mod binary;
pub mod unary;
