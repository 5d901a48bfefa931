//! [`DwtClock`]: the DWT cycle counter as an `ember_core::Clock`, for per-op profiles in core cycles.
//!
//! The counter (`DWT.CYCCNT`) is 32 bits; each `now()` extends it to 64 by counting wraps, which is right
//! as long as two readings are less than 2^32 cycles apart (about 25 s at 168 MHz): a profile reads the
//! clock around every op. QEMU does not model the counter (it reads 0); time QEMU runs with SysTick and
//! `-icount` instead (see `shared/TOOLCHAIN.md`).

use core::cell::Cell;
use core::fmt;

use cortex_m::peripheral::{DCB, DWT};
use ember_core::Clock;

/// Why a [`DwtClock`] cannot start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClockError {
    /// The core's DWT has no cycle counter (its `DWT_CTRL.NOCYCCNT` bit is set).
    NoCycleCounter,
}

impl fmt::Display for ClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockError::NoCycleCounter => f.write_str("this core's DWT has no cycle counter"),
        }
    }
}

/// Core cycles from the DWT cycle counter, extended to 64 bits.
pub struct DwtClock {
    hz: u64,
    /// The last 32-bit reading, and the wraps seen before it.
    last: Cell<u32>,
    wraps: Cell<u32>,
}

impl DwtClock {
    /// Enables tracing and the cycle counter (unlocking the DWT first, as the Cortex-M7 needs), for a
    /// core clocked at `hz`. Takes the peripherals by `&mut` to show that it reconfigures them.
    pub fn start(dcb: &mut DCB, dwt: &mut DWT, hz: u64) -> Result<Self, ClockError> {
        if !DWT::has_cycle_counter() {
            return Err(ClockError::NoCycleCounter);
        }
        dcb.enable_trace();
        DWT::unlock();
        dwt.set_cycle_count(0);
        dwt.enable_cycle_counter();
        Ok(DwtClock {
            hz,
            last: Cell::new(0),
            wraps: Cell::new(0),
        })
    }
}

impl Clock for DwtClock {
    fn now(&self) -> u64 {
        let count = DWT::cycle_count();
        if count < self.last.get() {
            self.wraps.set(self.wraps.get().wrapping_add(1));
        }
        self.last.set(count);
        (u64::from(self.wraps.get()) << 32) | u64::from(count)
    }

    fn ticks_per_second(&self) -> u64 {
        self.hz
    }
}
