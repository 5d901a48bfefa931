//! The board-independent half of Ember's firmware examples: [`run_digits`] classifies the embedded digits
//! test images and prints what `cargo xtask` parses, so that each board's `src/bin/digits.rs` keeps only
//! what is its own (entry point, clock, output sink, exit, fault handlers).
//!
//! The output has one fact per line:
//!
//! ```text
//! model ops=9 blob_bytes=15552 weights_bytes=14640
//! op 1 Conv2d ticks=317596     (per op, first image, in the board's clock ticks)
//! pred 0 6                     (image index, top-1 class), one line per image
//! accuracy 353/360
//! memory arena_bytes=2575 used_bytes=2560 persistent_bytes=0 planned_bytes=2560 ...
//! inference images=360 ticks=249826310 ticks_per_second=25000000
//! ```
#![no_std]

use core::fmt::Write;

#[cfg(any(feature = "defmt-lines", feature = "dwt"))]
pub mod board;
#[cfg(feature = "cortex-m")]
pub mod cortex_m_glue;
#[cfg(feature = "systick")]
pub mod systick;

use ember_core::{Clock, Error, Kernels, Model, OpEvent, Session};

/// Pixels in one test image: 8x8, row-major, in [0, 1].
pub const PIXELS: usize = 64;

/// Declares, in the calling firmware crate, the test images that its `build.rs` embedded with
/// `ember_firmware_build::embed_digits`: `mod images`, with `IMAGES` and `LABELS` imported.
#[macro_export]
macro_rules! include_digits_images {
    () => {
        /// `IMAGES` and `LABELS`, from `tests/models/digits/` (written by `build.rs`).
        mod images {
            include!(concat!(env!("OUT_DIR"), "/images.rs"));
        }
        use images::{IMAGES, LABELS};
    };
}

/// Declares, in the calling firmware crate, what its `build.rs` wrote about the embedded digits model:
/// `mod model` (`ARENA_BYTES`, `KERNEL_ENTRIES`), and `static KERNELS`, the entries of the table
/// `$table` (such as `ember_core::REFERENCE`) for the model's ops and no others. With
/// [`include_digits_images!`] for the test images.
#[macro_export]
macro_rules! include_digits_model {
    ($table:expr) => {
        /// `ARENA_BYTES` and `KERNEL_ENTRIES`, from the model's memory plan (written by `build.rs`).
        mod model {
            include!(concat!(env!("OUT_DIR"), "/model.rs"));
        }
        /// The kernels of the embedded model's ops and no others (`model::KERNEL_ENTRIES`).
        static KERNELS: ember_core::Kernels = $table.only(model::KERNEL_ENTRIES);
        $crate::include_digits_images!();
    };
}

/// Writes one line to `out`. A sink that fails loses the line and the demo goes on, as `hprintln!` does;
/// the host's check then finds the line missing.
macro_rules! emit {
    ($out:expr, $($arg:tt)*) => {
        let _ = writeln!($out, $($arg)*);
    };
}

/// Runs the digits demo: parses `blob` (validating only the op kinds of the kernel-table mask `ENTRIES`,
/// the model's `KERNEL_ENTRIES`, so that no other op's validation is linked), opens a session over
/// `arena`, profiles `images[0]` op by op, classifies every image (timed as a whole, with the printing
/// left out), then prints each top-1 class, the accuracy against `labels`, the arena report and the
/// inference time, all to `out`. The session runs `kernels`: a table with only the model's entries
/// (`REFERENCE.only(model::KERNEL_ENTRIES)`) keeps every other kernel out of the firmware.
pub fn run_digits<const ENTRIES: u64, const N: usize>(
    blob: &[u8],
    arena: &mut [u8],
    images: &[[f32; PIXELS]; N],
    labels: &[u8; N],
    clock: &dyn Clock,
    out: &mut dyn Write,
    kernels: &'static Kernels,
) -> Result<(), Error> {
    let model = Model::parse_only::<ENTRIES>(blob)?;
    emit!(
        out,
        "model ops={} blob_bytes={} weights_bytes={}",
        model.op_count(),
        model.blob_bytes(),
        model.weights_bytes()
    );
    let mut session = Session::with_kernels(&model, arena, kernels)?;

    // Profile the first image, op by op.
    if let Some(first) = images.first() {
        session.input(0)?.write_f32(first)?;
        session.run_profiled(clock, &mut |ev: &OpEvent| {
            emit!(out, "op {} {} ticks={}", ev.index, ev.op, ev.ticks);
        })?;
    }

    // Classify every image; print after timing, so that the output's I/O is not counted.
    let mut predictions = [0u8; N];
    let start = clock.now();
    for (image, prediction) in images.iter().zip(predictions.iter_mut()) {
        session.input(0)?.write_f32(image)?;
        session.run()?;
        *prediction = top1(session.output(0)?.as_f32()?);
    }
    let ticks = clock.now() - start;

    let mut correct = 0;
    for (i, (&prediction, &label)) in predictions.iter().zip(labels.iter()).enumerate() {
        emit!(out, "pred {} {}", i, prediction);
        correct += usize::from(prediction == label);
    }
    emit!(out, "accuracy {}/{}", correct, N);
    let m = session.memory_report();
    emit!(
        out,
        "memory arena_bytes={} used_bytes={} persistent_bytes={} planned_bytes={} lower_bound_bytes={} peak_bytes={} scratch_bytes={}",
        m.arena_bytes,
        m.used_bytes,
        m.persistent_bytes,
        m.planned_bytes,
        m.lower_bound_bytes,
        m.peak_bytes,
        m.scratch_bytes
    );
    emit!(
        out,
        "inference images={} ticks={} ticks_per_second={}",
        N,
        ticks,
        clock.ticks_per_second()
    );
    Ok(())
}

/// Index of the largest score (the first one on a tie), as a class number.
fn top1(scores: &[f32]) -> u8 {
    let mut best = 0;
    for (i, &s) in scores.iter().enumerate() {
        if s > scores[best] {
            best = i;
        }
    }
    best as u8
}
