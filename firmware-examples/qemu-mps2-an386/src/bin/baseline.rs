//! The same board without Ember: the digits firmware's entry point, SysTick clock, semihosting output,
//! exit and fault handlers, and a loop over the same test images, but no model. `cargo xtask firmware`
//! builds it next to `digits` and prints the difference of their `.text` sizes: what Ember (runtime
//! and the model's kernels) costs in flash.
#![no_std]
#![no_main]

use core::fmt::Write;

use cortex_m_rt::{entry, exception, ExceptionFrame};
use cortex_m_semihosting::debug;
use cortex_m_semihosting::hio;
use cortex_m_semihosting::hprintln;
use ember_core::Clock;
use ember_firmware_demo::cortex_m_glue::{exit, SysTickClock};

/// `IMAGES` and `LABELS`, from `tests/models/digits/` (written by `build.rs`).
mod images {
    include!(concat!(env!("OUT_DIR"), "/images.rs"));
}
use images::{IMAGES, LABELS};

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        exit(debug::EXIT_FAILURE)
    };
    let clock = SysTickClock::start(peripherals.SYST, 25_000_000);
    let Ok(mut out) = hio::hstdout() else {
        exit(debug::EXIT_FAILURE)
    };
    // Stands in for inference: the brightest of the first ten pixels, as a "class", per image.
    let start = clock.now();
    let mut hits = 0usize;
    for (image, &label) in IMAGES.iter().zip(LABELS.iter()) {
        let mut best = 0;
        for (i, &px) in image.iter().take(10).enumerate() {
            if px > image[best] {
                best = i;
            }
        }
        hits += usize::from(best == usize::from(label));
    }
    let ticks = clock.now() - start;
    let _ = writeln!(
        out,
        "baseline images={} hits={hits} ticks={ticks}",
        IMAGES.len()
    );
    exit(debug::EXIT_SUCCESS)
}

/// Without this handler a fault would hang QEMU; report it and fail instead.
// SAFETY: `cortex-m-rt` requires the HardFault handler to be declared `unsafe fn`; the body only reads the
// stacked frame it is handed and exits through semihosting, with no raw pointer or other unsafe operation.
#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    hprintln!("hard fault at pc={:#010x}", frame.pc());
    exit(debug::EXIT_FAILURE)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    exit(debug::EXIT_FAILURE)
}
