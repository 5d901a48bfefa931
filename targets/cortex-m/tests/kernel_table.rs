//! `KERNELS` replaces exactly the entries `ACCELERATED` names: every other entry is the reference kernel,
//! compared as function pointers. The destructuring below names every field of `Kernels`, so a new op
//! in the table fails to compile here until this list (and the decision for it) is updated.

use ember_core::kernels::{QuantConv2dFn, QuantFullyConnectedFn};
use ember_core::{Kernels, REFERENCE};
use ember_cortex_m::{ACCELERATED, DSP_KERNELS, KERNELS};

/// Names of the fields of two tables whose function pointers differ.
macro_rules! differing_entries {
    ($a:expr, $b:expr; $($field:ident),* $(,)?) => {{
        // Exhaustive: every field of `Kernels` must be listed.
        let Kernels { name: _, entries: _, scratch: _, $($field: _),* } = $a;
        let mut names: Vec<&'static str> = Vec::new();
        $(
            if $a.$field as usize != $b.$field as usize {
                names.push(stringify!($field));
            }
        )*
        names
    }};
}

fn differing() -> Vec<&'static str> {
    differing_entries!(KERNELS, REFERENCE;
        movement8, movement16, movement32, movement64, conv2d, conv_transpose2d, fully_connected, matmul, binary, unary, softmax, max_pool,
        avg_pool, global_avg_pool, concat, transpose, pad, reshape, log_softmax, reduce, layer_norm,
        slice, gather, broadcast, resize, binary_any, unary_any, compare, logical, not, where_select,
        cast, arg_reduce, quant_conv2d, quant_fully_connected, quant_add, quant_mul, quant_avg_pool,
        quant_max_pool, quant_softmax, quantize, dequantize, requantize, fully_connected_w8, embedding,
    )
}

#[test]
fn accelerated_entries_are_exactly_the_listed_ones() {
    assert_eq!(differing(), ACCELERATED);
}

#[test]
fn the_host_runs_the_dsp_kernels_on_the_emulated_instructions() {
    // On the host the table holds the DSP kernels (over `dsp::portable`), so the int8 suite
    // (`tests/ops_int8_dsp.rs`) checks them.
    const { assert!(DSP_KERNELS) };
    assert_eq!(KERNELS.name, "cortex-m-dsp");
    assert_eq!(ACCELERATED, ["quant_conv2d", "quant_fully_connected"]);
    let conv: QuantConv2dFn = ember_cortex_m::table::quant_conv2d;
    let fc: QuantFullyConnectedFn = ember_cortex_m::table::quant_fully_connected;
    assert_eq!(KERNELS.quant_conv2d as usize, conv as usize);
    assert_eq!(KERNELS.quant_fully_connected as usize, fc as usize);
}
