//! The digits CNN and nothing else: the `baseline` firmware's loop over the test images with Ember's
//! inference in place of its stand-in, and the same one output line. `cargo xtask firmware` builds it
//! next to `digits` and `baseline`: `.text` of this minus `.text` of `baseline` is what the runtime
//! (parse and validate, session, dispatch and the model's kernels) costs in flash, without the demo's
//! per-op profile, op names and reports. It runs under QEMU in CI too, and its hit count must equal
//! the host's.
//!
//! ```text
//! classify images=360 hits=352 ticks=170000000
//! ```
#![no_std]
#![no_main]

use core::fmt::Write;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use ember_core::{Clock, Model, Session};
use ember_firmware_demo::cortex_m_glue::{exit, start};

// The model's kernels and no others, as in `digits` (feature `reference-kernels`: the portable ones).
#[cfg(not(feature = "reference-kernels"))]
ember_firmware_demo::include_digits_model!(ember_cortex_m::KERNELS);
#[cfg(feature = "reference-kernels")]
ember_firmware_demo::include_digits_model!(ember_core::REFERENCE);

#[entry]
fn main() -> ! {
    let (clock, mut out) = start(25_000_000);
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    let start = clock.now();
    match classify(blob, &mut arena) {
        Ok(hits) => {
            let ticks = clock.now() - start;
            let _ = writeln!(
                out,
                "classify images={} hits={hits} ticks={ticks}",
                IMAGES.len()
            );
            exit(debug::EXIT_SUCCESS)
        }
        Err(e) => {
            let _ = writeln!(out, "error {e}");
            exit(debug::EXIT_FAILURE)
        }
    }
}

/// Classifies every image; returns how many top-1 classes equal their label.
fn classify(blob: &[u8], arena: &mut [u8]) -> Result<usize, ember_core::Error> {
    let model = Model::parse_only::<{ model::KERNEL_ENTRIES }>(blob)?;
    let mut session = Session::with_kernels(&model, arena, &KERNELS)?;
    let mut hits = 0;
    for (image, &label) in IMAGES.iter().zip(LABELS.iter()) {
        session.input(0)?.write_f32(image)?;
        session.run()?;
        let scores = session.output(0)?.as_f32()?;
        let mut best = 0;
        for (i, &s) in scores.iter().enumerate() {
            if s > scores[best] {
                best = i;
            }
        }
        hits += usize::from(best == usize::from(label));
    }
    Ok(hits)
}

ember_firmware_demo::exit_on_fault!();
