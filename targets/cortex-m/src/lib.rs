//! # ember-cortex-m
//!
//! Ember's Cortex-M target: int8 Conv2d (plain, grouped, dilated, depthwise) and FullyConnected
//! kernels on the DSP extension (packed 16-bit multiply-accumulate, `SMLAD`, on int8 pairs sign-extended
//! by `SXTB16`, as CMSIS-NN does), giving the same bytes as `ember-core`'s reference kernels on every
//! input; a DWT cycle-counter [`Clock`](ember_core::Clock) (`clock::DwtClock`, on ARMv7-M and up).
//!
//! The bytes are checked three ways: `tests/ops_int8_dsp.rs` runs `ember-core`'s whole int8 suite on
//! this table, `tests/dsp_vs_reference.rs` compares with the reference on shapes that suite does not
//! reach (both on the host, over the emulated instructions), and `firmware-examples/qemu-dsp-check`
//! compares on the emulated Cortex-M4F and M7 with the real instructions (`cargo xtask dsp-check`, part
//! of `cargo xtask firmware` and `ci`), where it also counts instructions: 2.2x to 3.7x fewer than the
//! reference on small-CNN layers.
//!
//! Pick the table by value: `Session::with_kernels(&model, arena, &ember_cortex_m::KERNELS)`.
//!
//! | target | `KERNELS` |
//! | --- | --- |
//! | `thumbv7em-*` (Cortex-M4, M7) | the DSP kernels, through `asm!` |
//! | other Arm cores (`thumbv6m`, `thumbv7m`, `thumbv8m.*`) | the reference kernels: no DSP extension (the M33's is optional, and stable Rust cannot see `+dsp`; see `build.rs`) |
//! | anything else (the host) | the DSP kernels on a portable emulation of the instructions, so that the host tests check the kernels' packing and ordering |
//!
//! [`ACCELERATED`] names the entries that differ from `ember_core::REFERENCE`; a test holds the two
//! together.
//!
//! Logging: this crate logs nothing, so it has no logging shim; its `defmt` feature derives
//! `defmt::Format` for its types and turns on `ember-core`'s.
#![no_std]
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(test)]
extern crate std;

#[cfg(ember_cycle_counter)]
pub mod clock;
pub mod dsp;
pub mod ops;

use ember_core::Kernels;

/// Whether [`KERNELS`] runs the DSP kernels (false on Arm cores without the DSP extension).
pub const DSP_KERNELS: bool = cfg!(ember_dsp_kernels);

/// The Cortex-M kernel table: `ember-core`'s reference table with the [`ACCELERATED`] entries replaced.
#[cfg(ember_dsp_kernels)]
pub static KERNELS: Kernels = Kernels {
    name: "cortex-m-dsp",
    quant_conv2d: table::quant_conv2d,
    quant_fully_connected: table::quant_fully_connected,
    ..ember_core::REFERENCE
};

/// [`KERNELS`] for int8 models only (f32 at their edges): it leaves out the other families, so a
/// firmware that uses it links only the f32 and int8 kernels.
#[cfg(ember_dsp_kernels)]
pub static KERNELS_INT8: Kernels = Kernels {
    name: "cortex-m-dsp-int8",
    quant_conv2d: table::quant_conv2d,
    quant_fully_connected: table::quant_fully_connected,
    ..ember_core::REFERENCE_INT8
};

/// The DSP kernels in the kernel table's signatures (what [`KERNELS`] holds): they use no scratch and
/// one thread, so they ignore the [`Workspace`](ember_core::Workspace).
#[cfg(ember_dsp_kernels)]
pub mod table {
    use ember_core::ops::quant::conv::QuantConv2dParams;
    use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
    use ember_core::ops::{In, Out};
    use ember_core::single_threaded_kernel;

    use crate::ops::quant::conv::conv2d;
    use crate::ops::quant::fully_connected::fully_connected;

    single_threaded_kernel! {
        /// [`conv2d`](crate::ops::quant::conv::conv2d).
        pub fn quant_conv2d = conv2d(p: &QuantConv2dParams, x: In<'_, i8>, w: In<'_, i8>,
            b: Option<&[i32]>, requant: &[i32], y: Out<'_, i8>)
    }

    single_threaded_kernel! {
        /// [`fully_connected`](crate::ops::quant::fully_connected::fully_connected).
        pub fn quant_fully_connected = fully_connected(p: &QuantFullyConnectedParams,
            x: In<'_, i8>, w: In<'_, i8>, b: Option<&[i32]>, requant: &[i32], y: Out<'_, i8>)
    }
}

/// [`KERNELS`] for int8 models only, on a core without the DSP extension: the reference int8 table.
#[cfg(not(ember_dsp_kernels))]
pub static KERNELS_INT8: Kernels = Kernels {
    name: "cortex-m-int8",
    ..ember_core::REFERENCE_INT8
};

/// The Cortex-M kernel table on a core without the DSP extension: the reference kernels.
#[cfg(not(ember_dsp_kernels))]
pub static KERNELS: Kernels = Kernels {
    name: "cortex-m",
    ..ember_core::REFERENCE
};

/// The [`KERNELS`] entries (field names of `ember_core::Kernels`) that are not the reference kernels.
#[cfg(ember_dsp_kernels)]
pub const ACCELERATED: &[&str] = &["quant_conv2d", "quant_fully_connected"];

/// The [`KERNELS`] entries that are not the reference kernels: none on a core without DSP.
#[cfg(not(ember_dsp_kernels))]
pub const ACCELERATED: &[&str] = &[];
