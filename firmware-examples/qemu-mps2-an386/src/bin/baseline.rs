//! The same board without Ember: the digits firmware's entry point, SysTick clock, semihosting output,
//! exit and fault handlers, and a loop over the same test images, but no model. `cargo xtask firmware`
//! builds it next to `digits` and prints the difference of their `.text` sizes: what Ember (runtime
//! and the model's kernels) costs in flash.
#![no_std]
#![no_main]

use core::fmt::Write;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use ember_core::Clock;
use ember_firmware_demo::cortex_m_glue::{exit, start};

ember_firmware_demo::include_digits_images!();

#[entry]
fn main() -> ! {
    let (clock, mut out) = start(25_000_000);
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

ember_firmware_demo::exit_on_fault!();
