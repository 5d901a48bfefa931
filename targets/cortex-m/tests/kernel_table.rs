//! `KERNELS` replaces exactly the entries `ACCELERATED` names: every other entry is the reference kernel,
//! compared as function pointers over every field of `Kernels` (`Kernels::replaced`), so that a new op
//! of the table is the reference kernel here until a decision to accelerate it updates `ACCELERATED`.

use ember_core::kernels::entry;
use ember_core::ops::quant::conv::QuantConv2dFn;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedFn;
use ember_core::REFERENCE;
use ember_cortex_m::{ACCELERATED, DSP_KERNELS, KERNELS};

/// Names of the fields of `KERNELS` whose function pointers differ from the reference table's (every
/// field of `Kernels`: `Kernels::replaced`).
fn differing() -> Vec<&'static str> {
    entry::names(KERNELS.replaced(&REFERENCE)).collect()
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
