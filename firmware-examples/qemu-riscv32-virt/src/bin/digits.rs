//! The digits CNN on RV32IMAC (QEMU `virt`, `-bios none`), f32 in software; output and exit via semihosting. Run: `cargo run --release`.
//!
//! `cargo xtask ci` runs it and checks every prediction against onnxruntime's. `cargo run` needs
//! `qemu-system-riscv32` on PATH (`cargo xtask` unpacks Debian's `qemu-system-misc` into
//! `../../target/qemu/usr/bin` where apt can't install it) and the converted model in
//! `target/digits.ember` (see `../ember-firmware-build`).
//!
//! Output and exit go through QEMU's semihosting (`riscv-semihosting`), which QEMU 7.2 supports for RISC-V
//! with `-semihosting-config enable=on`: the same protocol as the Arm examples, with no UART driver. (The
//! `virt` machine's `sifive_test` finisher at 0x10_0000 plus its 16550 UART would do without semihosting.)
//! The demo itself is `../ember-firmware-demo`'s `run_digits`; this file is the board: `mtime` as the
//! clock, the exit, the trap handler. The output has one fact per line, which `cargo xtask` parses (the
//! same lines as `qemu-mps2-an386`):
//!
//! ```text
//! model ops=9 blob_bytes=15552 weights_bytes=14640
//! op 1 Conv2d ticks=413238     (per op, first image; `mtime` ticks at 10 MHz, repeatable under `-icount`)
//! pred 0 6                     (image index, top-1 class), one line per image
//! accuracy 353/360
//! memory arena_bytes=2575 used_bytes=2560 persistent_bytes=0 planned_bytes=2560 ...
//! inference images=360 ticks=602399771 ticks_per_second=10000000
//! ```
//!
//! It exits with status 0, or 1 on an Ember error, a panic or a trap.
#![no_std]
#![no_main]

use ember_core::Clock;
use ember_firmware_demo::run_digits;
use riscv_rt::entry;
use riscv_semihosting::debug::{self, ExitStatus};
use riscv_semihosting::{hio, hprintln};

ember_firmware_demo::include_digits_model!(ember_core::REFERENCE);

#[entry]
fn main() -> ! {
    let Ok(mut out) = hio::hstdout() else {
        exit(debug::EXIT_FAILURE)
    };
    let blob = ember_core::include_model!(concat!(env!("OUT_DIR"), "/digits.ember"));
    let mut arena = [0u8; model::ARENA_BYTES];
    match run_digits::<{ model::KERNEL_ENTRIES }, _>(
        blob,
        &mut arena,
        &IMAGES,
        &LABELS,
        &MtimeClock,
        &mut out,
        &KERNELS,
    ) {
        Ok(()) => exit(debug::EXIT_SUCCESS),
        Err(e) => {
            hprintln!("error {}", e);
            exit(debug::EXIT_FAILURE)
        }
    }
}

/// Times ops with the machine timer `mtime` of the `virt` machine's CLINT (64 bits at 0x0200_bff8,
/// 10 MHz). Under `-icount shift=N` virtual time advances 2^N ns per instruction, so the ticks depend on
/// the instructions executed only.
struct MtimeClock;

/// `mtime`'s low and high words in the CLINT.
const MTIME_LO: *const u32 = 0x0200_bff8 as *const u32;
const MTIME_HI: *const u32 = 0x0200_bffc as *const u32;

impl Clock for MtimeClock {
    fn now(&self) -> u64 {
        loop {
            // SAFETY: on QEMU's `virt` machine 0x0200_bff8..0x0200_c000 is the CLINT's read-only `mtime`
            // register, always mapped and 4-aligned; reading it has no side effect.
            let (hi, lo, hi2) = unsafe {
                (
                    MTIME_HI.read_volatile(),
                    MTIME_LO.read_volatile(),
                    MTIME_HI.read_volatile(),
                )
            };
            // The low word wrapped between the reads of the high word: read again.
            if hi == hi2 {
                return (u64::from(hi) << 32) | u64::from(lo);
            }
        }
    }

    fn ticks_per_second(&self) -> u64 {
        10_000_000
    }
}

/// Without this handler a trap would spin forever; report it and fail instead.
#[export_name = "ExceptionHandler"]
fn exception_handler(_frame: &riscv_rt::TrapFrame) -> ! {
    hprintln!(
        "trap mcause={:#x} mepc={:#010x}",
        riscv::register::mcause::read().bits(),
        riscv::register::mepc::read()
    );
    exit(debug::EXIT_FAILURE)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    exit(debug::EXIT_FAILURE)
}

/// Ends the QEMU run with `status`.
fn exit(status: ExitStatus) -> ! {
    debug::exit(status);
    // Reached only without a semihosting host.
    loop {
        riscv::asm::wfi();
    }
}
