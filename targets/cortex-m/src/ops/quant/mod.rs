//! int8 kernels on the DSP extension: the reference kernels' arithmetic (TFLM's), bit for bit, with the
//! multiply-accumulates done two at a time by SMLAD on sign-extended int8 pairs (as CMSIS-NN does).
//!
//! Integer accumulation wraps modulo 2^32 in both the reference and SMLAD, so summing the same products
//! in another order gives the same bits; the requantization is the reference's own functions.

pub mod conv;
pub mod dot;
pub mod fully_connected;
