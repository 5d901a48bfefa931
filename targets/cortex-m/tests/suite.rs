//! `ember-testkit`'s int8 kernel suite (proptests against exact i64 models and the real-valued ops,
//! known answers, TFLM golden cases, `validate` edge cases) on this target's table, with the DSP
//! instructions emulated (`dsp::portable`): the kernels' packing and ordering must give the reference's
//! bytes on every case. (`cargo xtask dsp-check` runs the DSP kernels themselves under QEMU.)

use std::sync::LazyLock;

use ember_testkit::int8_suite;
use ember_testkit::ops_int8::Int8Kernels;

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

int8_suite!(int8_dsp, &crate::CORTEX_M);
