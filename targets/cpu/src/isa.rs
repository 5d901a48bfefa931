//! Instruction-set levels and their detection: which kernel table a session gets on this CPU.
//!
//! With `std` the level is read from the CPU at run time (`is_x86_feature_detected!`,
//! `is_aarch64_feature_detected!`); without it, from the features the crate was compiled for
//! (`-C target-feature`, `-C target-cpu`). `EMBER_CPU_ISA=scalar|sse2|avx2|avx512|neon|neon-dotprod` (std only)
//! forces a lower level, so that every level runs on one machine in tests and benchmarks; a level the
//! CPU lacks is an error, never a crash.

use core::fmt;

/// An instruction-set level with its own kernels, lowest first within each architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable Rust, no SIMD intrinsics (any CPU; what the others are checked against first).
    Scalar,
    /// x86-64 baseline: SSE2 (every x86-64 CPU).
    Sse2,
    /// x86-64 with AVX2 and FMA (Haswell, Zen and later).
    Avx2,
    /// x86-64 with AVX-512 F, BW, DQ, VL and VNNI besides AVX2 and FMA (`x86-64-v4` with VNNI:
    /// Cascade Lake, Ice Lake, Sapphire Rapids, Zen 4, Zen 5; Skylake-SP, without VNNI, runs `avx2`):
    /// the f32 GEMMs in 16-lane registers (AVX2's tiles on a CPU that splits 512-bit operations in two,
    /// Zen 4), the int8 GEMM tile on `vpdpwssd`, the rest as AVX2.
    Avx512,
    /// aarch64 baseline: NEON (every aarch64 CPU), int8 through `smlal`.
    Neon,
    /// aarch64 with the dot-product extension (`sdot`: Cortex-A55/A76 and later, Jetson Orin, Apple).
    NeonDotprod,
}

impl Isa {
    /// Every level, lowest first.
    pub const ALL: [Isa; 6] = [
        Isa::Scalar,
        Isa::Sse2,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Neon,
        Isa::NeonDotprod,
    ];

    /// The name used by `EMBER_CPU_ISA`, `ember inspect` and profiles.
    pub const fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Sse2 => "sse2",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
            Isa::NeonDotprod => "neon-dotprod",
        }
    }

    /// The level named `name` (as [`Isa::name`] writes it), if there is one.
    pub fn from_name(name: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.name() == name)
    }

    /// Whether this CPU can run the level's kernels.
    pub fn is_supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            Isa::Sse2 => cfg!(target_arch = "x86_64"),
            Isa::Avx2 => has_avx2_fma(),
            Isa::Avx512 => has_avx2_fma() && has_avx512(),
            Isa::Neon => cfg!(target_arch = "aarch64"),
            Isa::NeonDotprod => has_dotprod(),
        }
    }

    /// Every level this CPU can run, lowest first.
    pub fn supported() -> impl Iterator<Item = Isa> {
        Isa::ALL.into_iter().filter(|isa| isa.is_supported())
    }

    /// The highest level this CPU runs.
    pub fn best() -> Isa {
        Isa::supported().last().unwrap_or(Isa::Scalar)
    }

    /// The level a session gets: [`Isa::best`], or, with `std`, the one `EMBER_CPU_ISA` names.
    pub fn detect() -> Result<Isa, IsaError> {
        #[cfg(feature = "std")]
        if let Some(name) = std::env::var_os("EMBER_CPU_ISA") {
            let name = name.to_string_lossy();
            let isa = Isa::from_name(&name).ok_or(IsaError::Unknown)?;
            return if isa.is_supported() {
                Ok(isa)
            } else {
                Err(IsaError::Unsupported(isa))
            };
        }
        Ok(Isa::best())
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why `EMBER_CPU_ISA` could not be honoured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsaError {
    /// The variable names no level.
    Unknown,
    /// The level exists but this CPU cannot run it.
    Unsupported(Isa),
}

impl fmt::Display for IsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IsaError::Unknown => write!(
                f,
                "EMBER_CPU_ISA names no instruction-set level: use one of scalar, sse2, avx2, avx512 (x86-64), \
                 neon, neon-dotprod (aarch64)"
            ),
            IsaError::Unsupported(isa) => write!(
                f,
                "EMBER_CPU_ISA={isa}, but this CPU cannot run it: it supports {}",
                SupportedList
            ),
        }
    }
}

/// The supported levels, comma-separated.
struct SupportedList;

impl fmt::Display for SupportedList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, isa) in Isa::supported().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(isa.name())?;
        }
        Ok(())
    }
}

#[cfg(feature = "std")]
impl std::error::Error for IsaError {}

fn has_avx2_fma() -> bool {
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(all(target_arch = "x86_64", not(feature = "std")))]
    {
        cfg!(all(target_feature = "avx2", target_feature = "fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU executes a 512-bit operation as two 256-bit halves (AMD family 19h, Zen 4: its
/// AVX-512 does no more work per cycle than AVX2). Read from CPUID once, with `std`; `false` without it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn splits_512_bit_ops() -> bool {
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    {
        static SPLITS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *SPLITS.get_or_init(|| {
            use core::arch::x86_64::__cpuid;
            let vendor = __cpuid(0);
            let amd =
                [vendor.ebx, vendor.edx, vendor.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163];
            // Family: the base family (bits 8-11), plus the extended family (bits 20-27) when it is 15.
            let eax = __cpuid(1).eax;
            let base = (eax >> 8) & 0xf;
            let family = if base == 0xf {
                base + ((eax >> 20) & 0xff)
            } else {
                base
            };
            amd && family == 0x19
        })
    }
    #[cfg(not(all(target_arch = "x86_64", feature = "std")))]
    {
        false
    }
}

fn has_avx512() -> bool {
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(all(target_arch = "x86_64", not(feature = "std")))]
    {
        cfg!(all(
            target_feature = "avx512f",
            target_feature = "avx512bw",
            target_feature = "avx512dq",
            target_feature = "avx512vl",
            target_feature = "avx512vnni"
        ))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn has_dotprod() -> bool {
    #[cfg(all(target_arch = "aarch64", feature = "std"))]
    {
        std::arch::is_aarch64_feature_detected!("dotprod")
    }
    #[cfg(all(target_arch = "aarch64", not(feature = "std")))]
    {
        cfg!(target_feature = "dotprod")
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn names_round_trip() {
        for isa in Isa::ALL {
            assert_eq!(Isa::from_name(isa.name()), Some(isa));
        }
        assert_eq!(Isa::from_name("avx512f"), None);
    }

    #[test]
    fn scalar_always_runs_and_best_is_supported() {
        assert!(Isa::Scalar.is_supported());
        assert!(Isa::best().is_supported());
        #[cfg(target_arch = "x86_64")]
        assert!(Isa::Sse2.is_supported() && !Isa::Neon.is_supported());
        #[cfg(target_arch = "aarch64")]
        assert!(Isa::Neon.is_supported() && !Isa::Sse2.is_supported());
    }

    #[test]
    fn an_unsupported_level_is_named_in_the_error() {
        let other = if cfg!(target_arch = "aarch64") {
            Isa::Avx2
        } else {
            Isa::Neon
        };
        let msg = IsaError::Unsupported(other).to_string();
        assert!(
            msg.contains(other.name()) && msg.contains("scalar"),
            "{msg}"
        );
    }
}
