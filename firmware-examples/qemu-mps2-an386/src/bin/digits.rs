//! The digits CNN on a Cortex-M4F (QEMU mps2-an386): accuracy, arena, per-op profile. Run: `cargo run --release`.
//!
//! `cargo xtask ci` runs it and checks every prediction against onnxruntime's. `cargo run` needs
//! `qemu-system-arm` on PATH (`cargo xtask` unpacks one into `../../target/qemu/usr/bin` where apt can't
//! install it) and the converted model in `target/digits.ember` (see `../ember-firmware-build`).
//!
//! The same ELF runs on QEMU's `mps2-an500` (a Cortex-M7 with the AN386's memory map), which CI checks too:
//! `qemu-system-arm -M mps2-an500 -cpu cortex-m7 -nographic -semihosting-config enable=on,target=native
//! -icount shift=6 -kernel target/thumbv7em-none-eabihf/release/digits`.
//!
//! The model is whatever `EMBER_DIGITS_MODEL` (default `target/digits.ember`) holds: `cargo xtask` builds it
//! with the f32 digits CNN and with the int8 one, the latter twice: on `ember-cortex-m`'s DSP kernels and,
//! with feature `reference-kernels`, on the portable ones. Either way the kernel table holds only the
//! model's own entries (`model::KERNEL_ENTRIES`).
//!
//! The demo itself is `../ember-firmware-demo`'s `run_digits`, written to semihosting's stdout; this file
//! is the board: SysTick as the clock, the exit, the fault handler. The output has one fact per line,
//! which `cargo xtask` parses:
//!
//! ```text
//! model ops=9 blob_bytes=15552 weights_bytes=14640
//! op 1 Conv2d ticks=317596     (per op, first image; SysTick ticks, repeatable under `-icount`)
//! pred 0 6                     (image index, top-1 class), one line per image
//! accuracy 353/360
//! memory arena_bytes=2575 used_bytes=2560 persistent_bytes=0 planned_bytes=2560 ...
//! inference images=360 ticks=249826310 ticks_per_second=25000000
//! ```
//!
//! It exits through semihosting with status 0, or 1 on an Ember error, a panic or a hard fault.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
#[cfg(not(feature = "defmt"))]
use cortex_m_semihosting::{hio, hprintln};
use ember_firmware_demo::cortex_m_glue::{exit, start_clock};
use ember_firmware_demo::run_digits;

// The kernels of the embedded model's ops and no others (`model::KERNEL_ENTRIES`): ember-cortex-m's
// table (SMLAD int8 convolutions and fully connected layers on the M4F), or with feature
// `reference-kernels` the portable reference, to compare the two on the same model.
#[cfg(not(feature = "reference-kernels"))]
ember_firmware_demo::include_digits_model!(ember_cortex_m::KERNELS);
#[cfg(feature = "reference-kernels")]
ember_firmware_demo::include_digits_model!(ember_core::REFERENCE);

/// A failure line: on semihosting's stdout, or as a defmt error (mixing raw semihosting output into the
/// defmt stream would corrupt its frames).
#[cfg(not(feature = "defmt"))]
macro_rules! report {
    ($($arg:tt)*) => { hprintln!($($arg)*) };
}
#[cfg(feature = "defmt")]
macro_rules! report {
    ($($arg:tt)*) => {{
        use core::fmt::Write as _;
        let mut line = ember_firmware_demo::board::DefmtLines::new();
        let _ = writeln!(line, $($arg)*);
    }};
}

#[cfg(feature = "defmt")]
use defmt_semihosting as _;

#[entry]
fn main() -> ! {
    let clock = start_clock(25_000_000);
    // The lines go out as text on semihosting's stdout, or with feature `defmt` as defmt frames (which
    // `ember qemu` decodes); the content is the same.
    #[cfg(not(feature = "defmt"))]
    let Ok(mut out) = hio::hstdout() else {
        exit(debug::EXIT_FAILURE)
    };
    #[cfg(feature = "defmt")]
    let mut out = ember_firmware_demo::board::DefmtLines::new();
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    match run_digits::<{ model::KERNEL_ENTRIES }, _>(
        blob, &mut arena, &IMAGES, &LABELS, &clock, &mut out, &KERNELS,
    ) {
        Ok(()) => exit(debug::EXIT_SUCCESS),
        Err(e) => {
            report!("error {}", e);
            exit(debug::EXIT_FAILURE)
        }
    }
}

ember_firmware_demo::exit_on_fault!(report);
