//! Shape variants on a microcontroller: one keyword-spotting blob, converted for utterances of 25, 49 and
//! 97 frames (`ember convert tests/models/kws/lengths/model.onnx --dim T=25,49,97 --shape
//! input=1,10,T`), runs each length in one fixed arena sized for the longest, on a Cortex-M4F (QEMU
//! `mps2-an386`). Run: `cargo run --release`, after `cargo xtask` (or the command above with `-o
//! target/kws_lengths.ember`) made the blob.
//!
//! Each utterance picks its variant with `Session::set_dims` (no allocation: the variant's plan is read
//! from the blob), runs, and prints its probabilities, which `cargo xtask ci` checks against
//! onnxruntime's (`tests/models/kws/lengths/y<frames>.npy`). The order switches between every pair of
//! variants. One fact per line:
//!
//! ```text
//! model variants=3 blob_bytes=20968 weights_bytes=15376 arena_bytes=10880 dim=T
//! variant 0 T=25 activation_bytes=2816
//! run T=97 variant=2 set_dims_ticks=180 run_ticks=1234567 probs=0.1,0.2,0.3,0.4
//! used 0 runs=2 peak_bytes=2816
//! clock ticks_per_second=25000000
//! ```
//!
//! It exits through semihosting with status 0, or 1 on an Ember error, a panic or a hard fault.
#![no_std]
#![no_main]

use core::fmt::Write;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use ember_core::{Clock, Error, Kernels, Model, Session, REFERENCE};
use ember_firmware_demo::cortex_m_glue::{exit, start};

/// `ARENA_BYTES` (the largest variant's) and `KERNEL_ENTRIES` (the model's ops and its variants' bit),
/// written by `build.rs`.
mod model {
    include!(concat!(env!("OUT_DIR"), "/model.rs"));
}

/// `UTTERANCES`: the frame count and features of each test utterance, written by `build.rs`.
mod inputs {
    include!(concat!(env!("OUT_DIR"), "/inputs.rs"));
}

/// The portable kernels of the model's ops and no others.
static KERNELS: Kernels = REFERENCE.only(model::KERNEL_ENTRIES);

/// The utterances (indices of `inputs::UTTERANCES`) in the order they run: from the longest to the
/// shortest, up to the middle one, and back, so that every variant follows every other.
const ORDER: [usize; 6] = [2, 0, 1, 2, 1, 0];

#[entry]
fn main() -> ! {
    let (clock, mut out) = start(25_000_000);
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/kws_lengths.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    match run(blob, &mut arena, &clock, &mut out) {
        Ok(()) => exit(debug::EXIT_SUCCESS),
        Err(e) => {
            hprintln!("error {}", e);
            exit(debug::EXIT_FAILURE)
        }
    }
}

/// Runs every utterance of [`ORDER`] through one session over `arena`, printing what `cargo xtask`
/// checks. Output that semihosting fails to write is lost, and the host's check then finds it missing.
fn run(blob: &[u8], arena: &mut [u8], clock: &dyn Clock, out: &mut dyn Write) -> Result<(), Error> {
    let model = Model::parse_only::<{ model::KERNEL_ENTRIES }>(blob)?;
    let _ = writeln!(
        out,
        "model variants={} blob_bytes={} weights_bytes={} arena_bytes={} dim={}",
        model.variant_count(),
        model.blob_bytes(),
        model.weights_bytes(),
        model.arena_bytes(),
        model.dim_name(0).unwrap_or("?"),
    );
    let mut session = Session::with_kernels(&model, arena, &KERNELS)?;
    // Each variant's plan, read through the session (as a run would switch to it).
    for i in 0..model.variant_count() {
        let frames = model.variant_dims(i).and_then(|d| d.first().copied());
        session.set_variant(i)?;
        let activations = session.model().plan().activation_bytes;
        let _ = writeln!(
            out,
            "variant {i} T={} activation_bytes={activations}",
            frames.unwrap_or(0)
        );
    }
    for &u in &ORDER {
        let (frames, x) = inputs::UTTERANCES[u];
        let t0 = clock.now();
        let variant = session.set_dims(&[frames])?;
        let t1 = clock.now();
        session.input(0)?.write_f32(x)?;
        let t2 = clock.now();
        session.run()?;
        let t3 = clock.now();
        let _ = write!(
            out,
            "run T={frames} variant={variant} set_dims_ticks={} run_ticks={} probs=",
            t1 - t0,
            t3 - t2
        );
        for (j, p) in session.output(0)?.as_f32()?.iter().enumerate() {
            let _ = write!(out, "{}{p:?}", if j == 0 { "" } else { "," });
        }
        let _ = writeln!(out);
    }
    for i in 0..model.variant_count() {
        if let Some(u) = session.variant_use(i) {
            let _ = writeln!(out, "used {i} runs={} peak_bytes={}", u.runs, u.peak_bytes);
        }
    }
    let _ = writeln!(out, "clock ticks_per_second={}", clock.ticks_per_second());
    Ok(())
}

ember_firmware_demo::exit_on_fault!();
