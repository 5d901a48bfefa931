//! `ember-core`'s whole int8 kernel suite (`core/tests/ops_int8.rs`: proptests against exact i64 models
//! and the real-valued ops, known answers, TFLM golden cases, `validate` edge cases) run on this target's
//! table, with the DSP instructions emulated (`dsp::portable`): the kernels' packing and ordering must
//! give the reference's bytes on every case.
//!
//! The suite's files refer to their helpers as `crate::...`, so this test crate's root re-exports them:
//! `suite` is `ops_int8.rs` itself (its `int8_suite!` macro and helpers, and its own run of the reference
//! table), and the check modules are included again at the root, where the macro looks for them (hence
//! `duplicate_mod`).
#![allow(clippy::duplicate_mod)]

#[path = "../../../core/tests/ops_int8.rs"]
#[macro_use]
#[allow(dead_code)]
mod suite;

#[path = "../../../core/tests/ops_int8/conv.rs"]
mod conv;
#[path = "../../../core/tests/ops_int8/elementwise.rs"]
mod elementwise;
#[path = "../../../core/tests/ops_int8/pool.rs"]
mod pool;
#[path = "../../../core/tests/ops_int8/softmax.rs"]
mod softmax;
#[path = "../../../core/tests/ops_int8/tflm.rs"]
mod tflm;

pub use suite::*;

use std::sync::LazyLock;

/// The int8 kernels of `ember_cortex_m::KERNELS` (its convolution and fully connected ones as written;
/// the table holds adapters to them, see `kernel_table.rs`).
static CORTEX_M: LazyLock<Int8Kernels> = LazyLock::new(|| {
    let k = &ember_cortex_m::KERNELS;
    Int8Kernels {
        conv2d: ember_cortex_m::ops::quant::conv::conv2d,
        fully_connected: ember_cortex_m::ops::quant::fully_connected::fully_connected,
        add: k.quant_add,
        mul: k.quant_mul,
        avg_pool: k.quant_avg_pool,
        max_pool: k.quant_max_pool,
        softmax: k.quant_softmax,
        quantize: k.quantize,
        dequantize: k.dequantize,
        requantize: k.requantize,
    }
});

int8_suite!(cortex_m_dsp, &crate::CORTEX_M);
