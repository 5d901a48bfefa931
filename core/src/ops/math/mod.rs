//! Element-wise math: fused activations, unary and broadcasting binary ops (f32, and `arith` for the
//! other numeric dtypes), comparisons, boolean logic, `Where` and casts.

pub mod activation;
pub mod arith;
pub mod binary;
pub mod cast;
pub mod compare;
pub mod logical;
pub mod unary;
pub mod where_op;
