//! A SysTick [`Clock`] (feature `systick`): the 24-bit down-counter at the core clock, its wrap exception
//! counting the bits above. Works on every Cortex-M, M0+ included.

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use cortex_m_rt::exception;
use ember_core::Clock;

/// Times ops with SysTick: its 24-bit down-counter runs at the core clock, and its wrap exception counts
/// the bits above. QEMU's DWT cycle counter reads 0, so SysTick it is; run QEMU with `-icount shift=N`
/// for ticks that depend on the instructions executed only (one every 2^N ns).
pub struct SysTickClock {
    hz: u64,
}

/// SysTick wraps since `SysTickClock::start`.
static SYSTICK_WRAPS: AtomicU32 = AtomicU32::new(0);
const SYSTICK_RELOAD: u32 = 0x00ff_ffff;

impl SysTickClock {
    /// Starts SysTick on the core clock, which runs at `hz` (25 MHz on the MPS2 boards, 12.5 MHz on QEMU's
    /// `lm3s6965evb`, whose RCC reset value gives a 200 MHz PLL / 16).
    pub fn start(mut syst: SYST, hz: u64) -> Self {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(SYSTICK_RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The count reads 0 until the first tick loads the reload value; that 0 would read as a full period.
        while SYST::get_current() == 0 {}
        SysTickClock { hz }
    }
}

impl Clock for SysTickClock {
    fn now(&self) -> u64 {
        loop {
            let wraps = SYSTICK_WRAPS.load(Ordering::Relaxed);
            let count = SYST::get_current();
            // A wrap whose exception has not run yet (QEMU takes interrupts between translated blocks
            // only) shows as a pending SysTick with a count just below the reload value: count it here.
            let unhandled_wrap = SCB::is_pendst_pending() && count > SYSTICK_RELOAD / 2;
            // A wrap handled between the two loads would pair old high bits with a new count: read again.
            if SYSTICK_WRAPS.load(Ordering::Relaxed) == wraps {
                let wraps = u64::from(wraps) + u64::from(unhandled_wrap);
                return (wraps << 24) | u64::from(SYSTICK_RELOAD - count);
            }
        }
    }

    fn ticks_per_second(&self) -> u64 {
        self.hz
    }
}

#[exception]
fn SysTick() {
    // Load and store, not fetch_add: thumbv6m (Cortex-M0+) has no atomic read-modify-write, and on a
    // single core nothing else writes the count while this handler runs (thread code only reads it).
    let wraps = SYSTICK_WRAPS.load(Ordering::Relaxed);
    SYSTICK_WRAPS.store(wraps.wrapping_add(1), Ordering::Relaxed);
}
