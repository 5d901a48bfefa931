//! Element-wise math: binary ops with broadcasting (Add, Sub, Mul, Div, Pow, PRelu, Mod), the variadic
//! ones (Min, Max, Sum, Mean), unary ops (activations, rounding, elementary functions) and Clip.

pub mod binary;
pub mod clip;
pub mod unary;
pub mod variadic;
