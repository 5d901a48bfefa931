//! Element-wise math: binary ops with broadcasting (Add, Sub, Mul, Div, Pow, PRelu, Mod), the variadic
//! ones (Min, Max, Sum, Mean), unary ops (activations, rounding, elementary functions), Clip,
//! comparisons and boolean logic.

pub mod binary;
pub mod clip;
pub mod compare;
pub mod logical;
pub mod unary;
pub mod variadic;
