//! The digits CNN on an STM32F411 board, logged with defmt over RTT. Run: `cargo run --release` with the
//! board on a debug probe (the runner is `ember flash`, which flashes, resets and prints the log).
//!
//! It runs `../ember-firmware-demo`'s `run_digits` on the embedded test images: the same lines as the QEMU
//! examples (the per-op profile, each top-1 class, accuracy, the arena report, the inference time), in
//! cycles of the DWT cycle counter at the reset clock (16 MHz HSI). Each line goes out as one defmt string.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use defmt_rtt as _;
use panic_probe as _;

ember_firmware_demo::include_digits_model!(ember_core::REFERENCE);

/// The core clock at reset: the 16 MHz HSI.
const CORE_HZ: u64 = 16_000_000;

#[entry]
fn main() -> ! {
    let clock = ember_firmware_demo::board::start_dwt(CORE_HZ);
    ember_firmware_demo::run_digits_then_sleep!(&clock)
}
