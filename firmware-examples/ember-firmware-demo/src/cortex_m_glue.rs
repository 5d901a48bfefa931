//! Glue shared by the QEMU Cortex-M boards: the SysTick [`Clock`] and [`exit`] through semihosting.

use cortex_m_semihosting::debug::{self, ExitStatus};

pub use crate::systick::SysTickClock;

/// Ends the QEMU run with `status`.
pub fn exit(status: ExitStatus) -> ! {
    debug::exit(status);
    // Reached only without a semihosting host (on a board with no debugger attached).
    loop {
        cortex_m::asm::wfi();
    }
}
