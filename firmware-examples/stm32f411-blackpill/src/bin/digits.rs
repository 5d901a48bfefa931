//! The digits CNN on an STM32F411 board, logged with defmt over RTT. Run: `cargo run --release` with the
//! board on a debug probe (the runner is `ember flash`, which flashes, resets and prints the log).
//!
//! It runs `../ember-firmware-demo`'s `run_digits` on the embedded test images: the same lines as the QEMU
//! examples (the per-op profile, each top-1 class, accuracy, the arena report, the inference time), in
//! cycles of the DWT cycle counter at the reset clock (16 MHz HSI). Each line goes out as one defmt string.
#![no_std]
#![no_main]

use core::fmt;

use cortex_m::peripheral::DWT;
use cortex_m_rt::entry;
use defmt_rtt as _;
use ember_core::Clock;
use ember_firmware_demo::run_digits;
use panic_probe as _;

/// `ARENA_BYTES`, from the model's memory plan (written by `build.rs`).
mod model {
    include!(concat!(env!("OUT_DIR"), "/model.rs"));
}
/// `IMAGES` and `LABELS`, from `tests/models/digits/` (written by `build.rs`).
mod images {
    include!(concat!(env!("OUT_DIR"), "/images.rs"));
}
use images::{IMAGES, LABELS};

/// The core's cycle counter as a `Clock` (32 bits; an op never takes 2^32 cycles here).
struct CycleCounter;

impl Clock for CycleCounter {
    fn now(&self) -> u64 {
        u64::from(DWT::cycle_count())
    }

    fn ticks_per_second(&self) -> u64 {
        16_000_000
    }
}

/// `core::fmt` output as defmt log lines: collects text up to each `\n` and logs it as one `info!` string
/// (formatted on the chip, unlike defmt's own deferred formatting; the demo's lines are short and few).
struct DefmtLines {
    line: [u8; 192],
    len: usize,
}

impl DefmtLines {
    fn flush(&mut self) {
        match core::str::from_utf8(&self.line[..self.len]) {
            Ok(line) => defmt::info!("{=str}", line),
            Err(_) => defmt::info!("{=[u8]}", self.line[..self.len]),
        }
        self.len = 0;
    }
}

impl fmt::Write for DefmtLines {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            if b == b'\n' {
                self.flush();
                continue;
            }
            // A line longer than the buffer goes out in pieces.
            if self.len == self.line.len() {
                self.flush();
            }
            self.line[self.len] = b;
            self.len += 1;
        }
        Ok(())
    }
}

#[entry]
fn main() -> ! {
    if let Some(mut p) = cortex_m::Peripherals::take() {
        p.DCB.enable_trace();
        p.DWT.enable_cycle_counter();
    }
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    let mut out = DefmtLines {
        line: [0; 192],
        len: 0,
    };
    if let Err(e) = run_digits(blob, &mut arena, &IMAGES, &LABELS, &CycleCounter, &mut out) {
        defmt::error!("ember error: {}", e);
    }
    loop {
        cortex_m::asm::wfi();
    }
}
