//! The four DSP-extension instructions the int8 kernels use, on packed pairs of 16-bit lanes in a `u32`
//! (lane 0 in bits 15:0, lane 1 in bits 31:16):
//!
//! - [`sxtb16`] / [`sxtb16_ror8`]: bytes 0 and 2 (or, rotated by 8, bytes 1 and 3) of a word,
//!   sign-extended into the two lanes (`SXTB16`);
//! - [`sxtab16`] / [`sxtab16_ror8`]: the same, each lane added to a lane of another word (`SXTAB16`);
//! - [`smlad`]: both lane products added to an accumulator, wrapping at 32 bits (`SMLAD`).
//!
//! With the DSP extension (cfg `ember_dsp`, set by `build.rs` for `thumbv7em-*`) each is one instruction
//! through `asm!`; elsewhere each is the [`portable`] emulation, written from the Arm Architecture
//! Reference Manual's pseudocode, so that the host runs the kernels' packing and ordering logic exactly as
//! the core does. The QEMU check (`firmware-examples/qemu-dsp-check`) compares the two on the core.

/// The instructions' semantics in plain Rust (Armv7-M ARM, A7.7: `SXTB16`, `SXTAB16`, `SMLAD`).
pub mod portable {
    /// The low byte of `v`, sign-extended to 16 bits, as a lane.
    #[inline(always)]
    fn sext8(v: u32) -> u32 {
        u32::from(v as u8 as i8 as i16 as u16)
    }

    /// `SXTB16 Rd, Rm`: `[sext(byte 0), sext(byte 2)]`.
    #[inline(always)]
    pub fn sxtb16(m: u32) -> u32 {
        sext8(m) | (sext8(m >> 16) << 16)
    }

    /// `SXTB16 Rd, Rm, ROR #8`: `[sext(byte 1), sext(byte 3)]`.
    #[inline(always)]
    pub fn sxtb16_ror8(m: u32) -> u32 {
        sxtb16(m.rotate_right(8))
    }

    /// `SXTAB16 Rd, Rn, Rm`: `[n.lane0 + sext(byte 0), n.lane1 + sext(byte 2)]`, each lane modulo 2^16.
    #[inline(always)]
    pub fn sxtab16(n: u32, m: u32) -> u32 {
        let e = sxtb16(m);
        let lo = (n as u16).wrapping_add(e as u16);
        let hi = ((n >> 16) as u16).wrapping_add((e >> 16) as u16);
        u32::from(lo) | (u32::from(hi) << 16)
    }

    /// `SXTAB16 Rd, Rn, Rm, ROR #8`: `[n.lane0 + sext(byte 1), n.lane1 + sext(byte 3)]`.
    #[inline(always)]
    pub fn sxtab16_ror8(n: u32, m: u32) -> u32 {
        sxtab16(n, m.rotate_right(8))
    }

    /// `SMLAD Rd, Rn, Rm, Ra`: `a + n.lane0 * m.lane0 + n.lane1 * m.lane1` (signed lanes), the low 32
    /// bits of the exact sum (the core sets the Q flag when that wraps; the value is the same).
    #[inline(always)]
    pub fn smlad(n: u32, m: u32, a: i32) -> i32 {
        let p0 = i32::from(n as u16 as i16) * i32::from(m as u16 as i16);
        let p1 = i32::from((n >> 16) as u16 as i16) * i32::from((m >> 16) as u16 as i16);
        // Each product is within (-2^30, 2^30], so the exact sum's low 32 bits are the wrapping sum's.
        a.wrapping_add(p0).wrapping_add(p1)
    }
}

#[cfg(not(ember_dsp))]
pub use portable::{smlad, sxtab16, sxtab16_ror8, sxtb16, sxtb16_ror8};

#[cfg(ember_dsp)]
pub use dsp_asm::{smlad, sxtab16, sxtab16_ror8, sxtb16, sxtb16_ror8};

/// The instructions themselves (ARMv7E-M: Cortex-M4, M7, and M33 with DSP).
#[cfg(ember_dsp)]
mod dsp_asm {
    use core::arch::asm;

    /// `SXTB16 Rd, Rm`.
    #[inline(always)]
    pub fn sxtb16(m: u32) -> u32 {
        let d: u32;
        // SAFETY: `build.rs` sets `ember_dsp` only for cores with the DSP extension, where SXTB16 exists.
        // It reads one register and writes another, touches no memory, no stack and no flags, which is
        // what `pure, nomem, nostack, preserves_flags` promise.
        unsafe {
            asm!("sxtb16 {d}, {m}", d = lateout(reg) d, m = in(reg) m,
                 options(pure, nomem, nostack, preserves_flags));
        }
        d
    }

    /// `SXTB16 Rd, Rm, ROR #8`.
    #[inline(always)]
    pub fn sxtb16_ror8(m: u32) -> u32 {
        let d: u32;
        // SAFETY: as in `sxtb16`: a DSP core (see `build.rs`), registers only, no memory, stack or flags.
        unsafe {
            asm!("sxtb16 {d}, {m}, ror #8", d = lateout(reg) d, m = in(reg) m,
                 options(pure, nomem, nostack, preserves_flags));
        }
        d
    }

    /// `SXTAB16 Rd, Rn, Rm`.
    #[inline(always)]
    pub fn sxtab16(n: u32, m: u32) -> u32 {
        let d: u32;
        // SAFETY: a DSP core (see `build.rs`); SXTAB16 reads two registers and writes one (the lane adds
        // wrap and set no flag), with no memory, stack or flag effects.
        unsafe {
            asm!("sxtab16 {d}, {n}, {m}", d = lateout(reg) d, n = in(reg) n, m = in(reg) m,
                 options(pure, nomem, nostack, preserves_flags));
        }
        d
    }

    /// `SXTAB16 Rd, Rn, Rm, ROR #8`.
    #[inline(always)]
    pub fn sxtab16_ror8(n: u32, m: u32) -> u32 {
        let d: u32;
        // SAFETY: as in `sxtab16`: a DSP core, registers only, no memory, stack or flag effects.
        unsafe {
            asm!("sxtab16 {d}, {n}, {m}, ror #8", d = lateout(reg) d, n = in(reg) n, m = in(reg) m,
                 options(pure, nomem, nostack, preserves_flags));
        }
        d
    }

    /// `SMLAD Rd, Rn, Rm, Ra`.
    #[inline(always)]
    pub fn smlad(n: u32, m: u32, a: i32) -> i32 {
        let d: i32;
        // SAFETY: a DSP core (see `build.rs`); SMLAD reads three registers and writes one, touching no
        // memory or stack. It may set the sticky Q flag on a 32-bit wrap, so `preserves_flags` is NOT
        // claimed; the result is the low 32 bits of the exact sum either way (Armv7-M ARM, A7.7.110).
        unsafe {
            asm!("smlad {d}, {n}, {m}, {a}", d = lateout(reg) d, n = in(reg) n, m = in(reg) m,
                 a = in(reg) a, options(pure, nomem, nostack));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::portable::*;

    #[test]
    fn sign_extension_picks_the_right_bytes() {
        // Bytes (little-endian): 0x80, 0x7f, 0xff, 0x01.
        let m = 0x01ff_7f80;
        assert_eq!(sxtb16(m), 0xffff_ff80); // [-128, -1]
        assert_eq!(sxtb16_ror8(m), 0x0001_007f); // [127, 1]
        assert_eq!(sxtab16(0x0001_0080, m), 0x0000_0000); // [128 - 128, 1 - 1]
        assert_eq!(sxtab16_ror8(0xffff_0001, m), 0x0000_0080); // [1 + 127, -1 + 1]
    }

    #[test]
    fn smlad_wraps_like_the_core() {
        assert_eq!(smlad(0x0002_0003, 0xfffe_0005, 10), 10 + 15 - 4);
        // (-32768)^2 * 2 = 2^31: wraps to i32::MIN (the core sets Q).
        assert_eq!(smlad(0x8000_8000, 0x8000_8000, 0), i32::MIN);
        assert_eq!(
            smlad(0x7fff_0000, 0x7fff_0000, i32::MAX),
            i32::MAX.wrapping_add(0x3fff_0001)
        );
    }
}
