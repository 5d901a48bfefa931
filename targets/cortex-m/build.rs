//! Sets the cfgs the crate's code paths depend on, from the target triple (stable Rust does not expose
//! Arm's `dsp` target feature to `cfg`):
//!
//! - `ember_dsp`: the DSP extension is there (ARMv7E-M, `thumbv7em-*`: Cortex-M4/M7; or `dsp` among the
//!   target features Cargo reports, which only a nightly compiler does: on stable, `-C
//!   target-feature=+dsp` for a Cortex-M33 is an unstable feature that never reaches `cfg`, so
//!   `thumbv8m.main-*` runs the reference kernels). The kernels then use SMLAD and SXTB16 through
//!   `asm!`; elsewhere they run the portable emulation of the same instructions (the host tests).
//! - `ember_dsp_kernels`: `KERNELS` holds the DSP kernels: on DSP cores, and on anything that is not Arm
//!   (the host, which runs them on the emulation for its tests); Arm cores without DSP get the reference.
//! - `ember_cycle_counter`: an Arm M-profile core with a DWT cycle counter (ARMv7-M and up, not ARMv6-M
//!   or ARMv8-M Baseline).

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(ember_dsp)");
    println!("cargo::rustc-check-cfg=cfg(ember_dsp_kernels)");
    println!("cargo::rustc-check-cfg=cfg(ember_cycle_counter)");
    let target = env::var("TARGET").unwrap_or_default();
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let dsp = target.starts_with("thumbv7em-") || features.split(',').any(|f| f == "dsp");
    if dsp {
        println!("cargo::rustc-cfg=ember_dsp");
    }
    if dsp || arch != "arm" {
        println!("cargo::rustc-cfg=ember_dsp_kernels");
    }
    let m_profile_v7_up = ["thumbv7m-", "thumbv7em-", "thumbv8m.main-"];
    if m_profile_v7_up.iter().any(|p| target.starts_with(p)) {
        println!("cargo::rustc-cfg=ember_cycle_counter");
    }
}
