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
use ember_firmware_demo::systick::SysTickClock;
use panic_probe as _;

/// The second-stage boot loader for the Pico's W25Q080 flash, placed in `.boot2` by `memory.x`.
#[link_section = ".boot2"]
#[used]
pub static BOOT2: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

ember_firmware_demo::include_digits_model!(ember_core::REFERENCE);

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
    ember_firmware_demo::run_digits_then_sleep!(&clock)
}
