//! Glue for real boards: log lines over defmt (feature `defmt-lines`), and the DWT cycle counter as a
//! `Clock` (feature `dwt`; Cortex-M3 and up: the M0+ has no cycle counter, use `systick` there).

#[cfg(feature = "dwt")]
pub use dwt::{start_dwt, DwtClock};

#[cfg(feature = "dwt")]
mod dwt {
    use cortex_m::peripheral::DWT;
    use ember_core::Clock;

    /// The core's DWT cycle counter as a `Clock` (32 bits; an op never takes 2^32 cycles on these boards).
    /// Enable it first: `p.DCB.enable_trace(); p.DWT.enable_cycle_counter();`. Cortex-M3 and up only.
    pub struct DwtClock {
        /// The core clock, in Hz.
        pub hz: u64,
    }

    /// Enables the DWT cycle counter (if the core peripherals are still untaken; call it once, at the
    /// start of `main`) and returns it as a `Clock` on a core clock of `hz`.
    pub fn start_dwt(hz: u64) -> DwtClock {
        if let Some(mut p) = cortex_m::Peripherals::take() {
            p.DCB.enable_trace();
            p.DWT.enable_cycle_counter();
        }
        DwtClock { hz }
    }

    impl Clock for DwtClock {
        fn now(&self) -> u64 {
            u64::from(DWT::cycle_count())
        }

        fn ticks_per_second(&self) -> u64 {
            self.hz
        }
    }
}

#[cfg(feature = "defmt-lines")]
pub use lines::DefmtLines;

#[cfg(feature = "defmt-lines")]
mod lines {
    use core::fmt;

    /// `core::fmt` output as defmt log lines: collects text up to each `\n` and logs it as one `info!` string
    /// (formatted on the chip, unlike defmt's own deferred formatting; the demo's lines are short and few).
    pub struct DefmtLines {
        line: [u8; 192],
        len: usize,
    }

    impl DefmtLines {
        /// An empty line buffer.
        pub const fn new() -> Self {
            DefmtLines {
                line: [0; 192],
                len: 0,
            }
        }

        fn flush(&mut self) {
            match core::str::from_utf8(&self.line[..self.len]) {
                Ok(line) => defmt::info!("{=str}", line),
                Err(_) => defmt::info!("{=[u8]}", self.line[..self.len]),
            }
            self.len = 0;
        }
    }

    impl Default for DefmtLines {
        fn default() -> Self {
            Self::new()
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
}

/// The body of a real board's digits `main`, after its clock: runs [`run_digits`](crate::run_digits) on
/// the model and images that [`include_digits_model!`](crate::include_digits_model) declared, timed by
/// `$clock` (a `&dyn Clock`), with the lines logged as defmt strings; logs an Ember error with
/// `defmt::error!`, then sleeps. The calling crate depends on `cortex-m` and `defmt`, and its `build.rs`
/// embedded the model with `ember_firmware_build`.
#[cfg(feature = "defmt-lines")]
#[macro_export]
macro_rules! run_digits_then_sleep {
    ($clock:expr) => {{
        let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
        let mut arena = [0u8; model::ARENA_BYTES];
        let mut out = $crate::board::DefmtLines::new();
        if let Err(e) = $crate::run_digits::<{ model::KERNEL_ENTRIES }, _>(
            blob, &mut arena, &IMAGES, &LABELS, $clock, &mut out, &KERNELS,
        ) {
            defmt::error!("ember error: {}", e);
        }
        loop {
            cortex_m::asm::wfi();
        }
    }};
}
