//! Glue shared by the QEMU Cortex-M boards: the SysTick [`Clock`](ember_core::Clock), semihosting's
//! stdout, [`exit`] through semihosting, and [`exit_on_fault!`](crate::exit_on_fault) for the fault
//! and panic handlers.

use cortex_m_semihosting::debug::{self, ExitStatus};
use cortex_m_semihosting::hio::{self, HostStream};

pub use crate::systick::SysTickClock;

/// Ends the QEMU run with `status`.
pub fn exit(status: ExitStatus) -> ! {
    debug::exit(status);
    // Reached only without a semihosting host (on a board with no debugger attached).
    loop {
        cortex_m::asm::wfi();
    }
}

/// Starts SysTick as the clock on a core clock of `hz`; call it once, at the start of `main`. Exits with
/// failure if the core peripherals were already taken. Always inlined, as the code it stands for was:
/// a call costs the QEMU firmware some 20 to 40 bytes of flash.
#[inline(always)]
pub fn start_clock(hz: u64) -> SysTickClock {
    // `take` returns `Some` on its first call, and this is the only call.
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        exit(debug::EXIT_FAILURE)
    };
    SysTickClock::start(peripherals.SYST, hz)
}

/// [`start_clock`], and semihosting's stdout for the output lines; exits with failure if there is none.
/// Always inlined, as [`start_clock`].
#[inline(always)]
pub fn start(hz: u64) -> (SysTickClock, HostStream) {
    let clock = start_clock(hz);
    let Ok(out) = hio::hstdout() else {
        exit(debug::EXIT_FAILURE)
    };
    (clock, out)
}

/// Defines the firmware's HardFault and panic handlers: without them a fault would hang QEMU; they report
/// it (with `hprintln!`, or the line macro named as the argument) and exit with failure instead. The
/// calling crate depends on `cortex-m-rt` and `cortex-m-semihosting`.
#[macro_export]
macro_rules! exit_on_fault {
    () => {
        $crate::exit_on_fault!(::cortex_m_semihosting::hprintln);
    };
    ($($report:tt)+) => {
        // SAFETY: `cortex-m-rt` requires the HardFault handler to be declared `unsafe fn`; the body only
        // reads the stacked frame it is handed and exits through semihosting, with no raw pointer or other
        // unsafe operation.
        #[::cortex_m_rt::exception]
        unsafe fn HardFault(frame: &::cortex_m_rt::ExceptionFrame) -> ! {
            $($report)+!("hard fault at pc={:#010x}", frame.pc());
            $crate::cortex_m_glue::exit(::cortex_m_semihosting::debug::EXIT_FAILURE)
        }

        #[panic_handler]
        fn panic(info: &core::panic::PanicInfo) -> ! {
            $($report)+!("panic: {}", info);
            $crate::cortex_m_glue::exit(::cortex_m_semihosting::debug::EXIT_FAILURE)
        }
    };
}
