//! The digits CNN on a Cortex-M3 with 64 KiB of RAM (QEMU lm3s6965evb), f32 in software, arena on a measured stack. Run: `cargo run --release`.
//!
//! `cargo xtask ci` runs it and checks every prediction against onnxruntime's. `cargo run` needs
//! `qemu-system-arm` on PATH (`cargo xtask` unpacks one into `../../target/qemu/usr/bin` where apt can't
//! install it) and the converted model in `target/digits.ember` (see `../ember-firmware-build`).
//!
//! The arena is a stack array of exactly `ARENA_BYTES`; `cortex-m-rt`'s `paint-stack` fills the free RAM
//! with a pattern at reset, so the firmware can print how deep the stack went: static RAM (`.data` +
//! `.bss`) plus that peak is all the RAM the demo needs. The demo itself is `../ember-firmware-demo`'s
//! `run_digits`; this file is the board: SysTick as the clock, the stack measure, the exit, the fault
//! handler. The output has one fact per line, which `cargo xtask` parses (the same lines as
//! `qemu-mps2-an386`, plus `stack`):
//!
//! ```text
//! model ops=9 blob_bytes=15552 weights_bytes=14640
//! op 1 Conv2d ticks=585035     (per op, first image; SysTick ticks, repeatable under `-icount`)
//! pred 0 6                     (image index, top-1 class), one line per image
//! accuracy 353/360
//! memory arena_bytes=2575 used_bytes=2560 persistent_bytes=0 planned_bytes=2560 ...
//! inference images=360 ticks=814683404 ticks_per_second=12500000
//! stack peak_bytes=6484 size_bytes=65520
//! ```
//!
//! It exits through semihosting with status 0, or 1 on an Ember error, a panic or a hard fault.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use cortex_m_semihosting::hio::HostStream;
use cortex_m_semihosting::hprintln;
use ember_core::Error;
use ember_firmware_demo::cortex_m_glue::{exit, start, SysTickClock};
use ember_firmware_demo::run_digits;

ember_firmware_demo::include_digits_model!(ember_core::REFERENCE);

#[entry]
fn main() -> ! {
    let (clock, mut out) = start(12_500_000);
    match classify(&clock, &mut out) {
        Ok(()) => {
            let (peak, size) = stack_use();
            hprintln!("stack peak_bytes={} size_bytes={}", peak, size);
            exit(debug::EXIT_SUCCESS)
        }
        Err(e) => {
            hprintln!("error {}", e);
            exit(debug::EXIT_FAILURE)
        }
    }
}

// Not inlined into `main`, so that its frame (with the arena) is popped before `stack_use` runs.
#[inline(never)]
fn classify(clock: &SysTickClock, out: &mut HostStream) -> Result<(), Error> {
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    run_digits::<{ model::KERNEL_ENTRIES }, _>(
        blob, &mut arena, &IMAGES, &LABELS, clock, out, &KERNELS,
    )
}

/// The stack's deepest use so far and its size, in bytes: the stack grows down from `_stack_start` to
/// `_stack_end` (the end of `.bss`), which `paint-stack` filled with `0xcccc_cccc` at reset; the lowest
/// word that lost the paint marks the peak.
fn stack_use() -> (usize, usize) {
    extern "C" {
        static _stack_start: u32;
        static _stack_end: u32;
    }
    const PAINT: u32 = 0xcccc_cccc;
    let top = (&raw const _stack_start) as usize;
    let mut word = (&raw const _stack_end).cast::<u32>();
    while (word as usize) < top {
        // SAFETY: `word` lies in `[_stack_end, _stack_start)`, RAM that `cortex-m-rt`'s linker script
        // reserves for the stack, 4-aligned (the script aligns `_stack_end` to 4); nothing else owns it, and
        // a volatile read of a `u32` there is always valid.
        if unsafe { word.read_volatile() } != PAINT {
            break;
        }
        // SAFETY: `word` is below `top`, so one word further is still inside or one past the stack region.
        word = unsafe { word.add(1) };
    }
    (top - word as usize, top - (&raw const _stack_end) as usize)
}

ember_firmware_demo::exit_on_fault!();
