//! Element-wise math: fused activations, unary and broadcasting binary ops (f32, and `arith` for the
//! other numeric dtypes), comparisons, boolean logic, `Where` and casts.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/ops/math");
