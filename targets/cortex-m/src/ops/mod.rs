//! Optimized kernels, laid out as `ember-core`'s reference kernels are (`ops/<family>/<op>.rs`), each with
//! the reference kernel's name and signature.

pub mod quant;
