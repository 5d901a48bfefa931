//! Element-wise math: Add, Sub, Mul, Div (broadcasting), Relu, Sigmoid, Tanh, Clip.

pub mod binary;
pub mod clip;
pub mod unary;
