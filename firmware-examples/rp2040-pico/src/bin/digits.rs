//! The digits CNN on a Raspberry Pi Pico (RP2040, Cortex-M0+ without an FPU: f32 in software), logged
//! with defmt over RTT. Run: `cargo run --release` with the Pico on a debug probe (the runner is
//! `ember flash`, which flashes, resets and prints the log).
//!
//! It runs `../ember-firmware-demo`'s `run_digits` on the embedded test images: the same lines as the QEMU
//! examples (the per-op profile, each top-1 class, accuracy, the arena report, the inference time). The
//! M0+ has no cycle counter, so ticks come from SysTick on the core clock: at reset the RP2040 runs from
//! its ring oscillator (about 6.5 MHz, not trimmed), so the ticks are exact cycles but the seconds are
//! nominal. Each line goes out as one defmt string.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use defmt_rtt as _;
use ember_firmware_demo::board::DefmtLines;
use ember_firmware_demo::run_digits;
use ember_firmware_demo::systick::SysTickClock;
use panic_probe as _;

/// The second-stage boot loader for the Pico's W25Q080 flash, placed in `.boot2` by `memory.x`.
#[link_section = ".boot2"]
#[used]
pub static BOOT2: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

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

/// The core clock at reset: the ring oscillator's nominal frequency (it varies from chip to chip).
const CORE_HZ: u64 = 6_500_000;

#[entry]
fn main() -> ! {
    let Some(p) = cortex_m::Peripherals::take() else {
        defmt::error!("peripherals already taken");
        loop {
            cortex_m::asm::wfi();
        }
    };
    let clock = SysTickClock::start(p.SYST, CORE_HZ);
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    let mut out = DefmtLines::new();
    if let Err(e) = run_digits::<{ model::KERNEL_ENTRIES }, _>(
        blob, &mut arena, &IMAGES, &LABELS, &clock, &mut out, &KERNELS,
    ) {
        defmt::error!("ember error: {}", e);
    }
    loop {
        cortex_m::asm::wfi();
    }
}
