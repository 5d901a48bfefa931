//! The digits CNN on an STM32F411 board, logged with defmt over RTT. Run: `cargo run --release` with the
//! board on a debug probe (the runner is `ember flash`, which flashes, resets and prints the log).
//!
//! It classifies the embedded test images, then logs accuracy, the arena report, and each op's cycle count
//! from the DWT cycle counter (at the reset clock, 16 MHz HSI).
#![no_std]
#![no_main]

use cortex_m::peripheral::DWT;
use cortex_m_rt::entry;
use defmt_rtt as _;
use ember_core::{Clock, Error, Model, OpEvent, Session};
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

#[entry]
fn main() -> ! {
    if let Some(mut p) = cortex_m::Peripherals::take() {
        p.DCB.enable_trace();
        p.DWT.enable_cycle_counter();
    }
    if let Err(e) = classify(&CycleCounter) {
        defmt::error!("ember error: {}", e);
    }
    loop {
        cortex_m::asm::wfi();
    }
}

fn classify(clock: &CycleCounter) -> Result<(), Error> {
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let model = Model::parse(blob)?;
    let mut arena = [0u8; model::ARENA_BYTES];
    let mut session = Session::new(&model, &mut arena)?;

    session.input(0)?.write_f32(&IMAGES[0])?;
    session.run_profiled(clock, &mut |ev: &OpEvent| defmt::info!("op {} {} cycles={}", ev.index, ev.op, ev.ticks))?;

    let mut correct = 0usize;
    for (i, (image, &label)) in IMAGES.iter().zip(LABELS.iter()).enumerate() {
        session.input(0)?.write_f32(image)?;
        session.run()?;
        let scores = session.output(0)?.as_f32()?;
        let mut best = 0;
        for (k, &s) in scores.iter().enumerate() {
            if s > scores[best] {
                best = k;
            }
        }
        defmt::info!("pred {} {}", i, best);
        correct += usize::from(best as u8 == label);
    }
    defmt::info!("accuracy {}/{}", correct, IMAGES.len());
    defmt::info!("memory {}", session.memory_report());
    Ok(())
}
