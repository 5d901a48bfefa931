//! The digits CNN on a Nordic nRF52840 DK, logged with defmt over RTT. Run: `cargo run --release` with the
//! board on a debug probe (the runner is `ember flash`, which flashes, resets and prints the log).
//!
//! It runs `../ember-firmware-demo`'s `run_digits` on the embedded test images: the same lines as the QEMU
//! examples (the per-op profile, each top-1 class, accuracy, the arena report, the inference time), in
//! cycles of the DWT cycle counter at the core clock (64 MHz from reset). Each line goes out as one
//! defmt string.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use defmt_rtt as _;
use ember_firmware_demo::board::{DefmtLines, DwtClock};
use ember_firmware_demo::run_digits;
use panic_probe as _;

/// `ARENA_BYTES`, from the model's memory plan (written by `build.rs`).
mod model {
    include!(concat!(env!("OUT_DIR"), "/model.rs"));
}
/// The reference kernels of the embedded model's ops and no others (`model::KERNEL_ENTRIES`).
static KERNELS: ember_core::Kernels = ember_core::REFERENCE.only(model::KERNEL_ENTRIES);
/// `IMAGES` and `LABELS`, from `tests/models/digits/` (written by `build.rs`).
mod images {
    include!(concat!(env!("OUT_DIR"), "/images.rs"));
}
use images::{IMAGES, LABELS};

/// The core clock: the nRF52840 runs its Cortex-M4F at 64 MHz from reset.
const CORE_HZ: u64 = 64_000_000;

#[entry]
fn main() -> ! {
    if let Some(mut p) = cortex_m::Peripherals::take() {
        p.DCB.enable_trace();
        p.DWT.enable_cycle_counter();
    }
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    let mut out = DefmtLines::new();
    let clock = DwtClock { hz: CORE_HZ };
    if let Err(e) = run_digits::<{ model::KERNEL_ENTRIES }, _>(
        blob, &mut arena, &IMAGES, &LABELS, &clock, &mut out, &KERNELS,
    ) {
        defmt::error!("ember error: {}", e);
    }
    loop {
        cortex_m::asm::wfi();
    }
}
