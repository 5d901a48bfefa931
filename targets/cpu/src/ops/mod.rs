//! This crate's kernels, one file per op under `<family>/<op>.rs`, mirroring `ember_core::ops`.

pub mod quant;
