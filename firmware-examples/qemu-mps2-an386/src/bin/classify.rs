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

use cortex_m_rt::{entry, exception, ExceptionFrame};
use cortex_m_semihosting::{debug, hio, hprintln};
use ember_core::{Clock, Model, Session};
use ember_firmware_demo::cortex_m_glue::{exit, SysTickClock};

/// `ARENA_BYTES` and `KERNEL_ENTRIES`, from the model (written by `build.rs`).
mod model {
    include!(concat!(env!("OUT_DIR"), "/model.rs"));
}
/// The model's kernels and no others, as in `digits` (feature `reference-kernels`: the portable ones).
#[cfg(not(feature = "reference-kernels"))]
static KERNELS: ember_core::Kernels = ember_cortex_m::KERNELS.only(model::KERNEL_ENTRIES);
#[cfg(feature = "reference-kernels")]
static KERNELS: ember_core::Kernels = ember_core::REFERENCE.only(model::KERNEL_ENTRIES);
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
