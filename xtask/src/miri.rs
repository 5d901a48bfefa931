//! `cargo xtask miri`: the tests that exercise Ember's `unsafe` code, under Miri (nightly), which
//! fails on undefined behaviour: out-of-bounds or misaligned accesses, use after free, data races
//! between the thread pool's workers, invalid values, and SIMD intrinsics used outside their contract.
//!
//! `ember-core` forbids `unsafe`; its suite is here for what it borrows (aligned blob views through
//! `bytemuck`, `postcard`, `heapless`). The `unsafe` lives in `ember-cpu` (SIMD loads and stores at every
//! x86 level, the packed GEMM, the thread pool sharing an arena between workers) and in
//! `ember-cortex-m`'s DSP intrinsics, whose host build runs their portable emulation. Miri runs code
//! about a thousand times slower than a release build, so each suite is chosen to cover the unsafe
//! paths with small shapes and few property-test cases (the tests shrink under `cfg(miri)`).
//!
//! `cargo xtask miri` runs every suite (well over 15 minutes: the int8 every-level test alone runs
//! longer); `cargo xtask miri --ci`, a CI step, the subset of [`CI_SUITES`] (its tests took 137 and 8 s
//! on the 2-core AMD EPYC Zen 4 machine, then 85 and 8 s once the GEMM edge test used fewer tiles and
//! the recurrent test stopped formatting every element's message, 2026-12-07): the GEMM's edge panels, packing and tiles at the scalar,
//! SSE2 and AVX2 levels in one build, the thread pool's sharing of a buffer and its panics, the scratch
//! and range splitting, the recurrent kernel's unchecked loads, and `ember-core`'s blob decoding and
//! planning.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

/// One suite: the package, the `cargo test` selection, test-name filters (empty: all), and extra
/// `RUSTFLAGS` (target features, so that Miri runs that level's intrinsics; with AVX2 compiled in,
/// the scalar and SSE2 levels run too).
struct Suite {
    package: &'static str,
    selection: &'static [&'static str],
    filters: &'static [&'static str],
    rustflags: &'static str,
}

const SUITES: &[Suite] = &[
    // The thread pool, scratch, the GEMM tiles and packing, the lanes, and the ops' unit tests at the
    // baseline level (SSE2 on x86-64).
    Suite {
        package: "ember-cpu",
        selection: &["--lib"],
        filters: &[],
        rustflags: "",
    },
    // The same with AVX2 and FMA compiled in, so that the AVX2 kernels (the widest Miri emulates)
    // are the ones chosen.
    Suite {
        package: "ember-cpu",
        selection: &["--lib"],
        filters: &[],
        rustflags: "-C target-feature=+avx2,+fma",
    },
    Suite {
        package: "ember-core",
        selection: &["--lib"],
        filters: &[],
        rustflags: "",
    },
    Suite {
        package: "ember-cortex-m",
        selection: &["--test", "dsp_vs_reference"],
        filters: &[],
        rustflags: "",
    },
];

/// The flags of CI's suites, all the same so that Miri builds the dependencies once for all of them (each
/// set of `RUSTFLAGS` is a build of its own); AVX2 compiled in makes the AVX2 kernels the ones chosen,
/// and the scalar and SSE2 levels run too. `ember-core` uses no x86 intrinsics.
const AVX2: &str = "-C target-feature=+avx2,+fma";

/// CI's subset: the tests of the unsafe code that finish in seconds to two minutes under Miri each. Left
/// to the full run: the GEMM property test, the pool's two slowest tests (a task per worker, every
/// worker per job: 1 to 2 minutes each, covering what `one_pool_serves_several_callers` does), and
/// the int8 ops' every-level test (over 15 minutes).
const CI_SUITES: &[Suite] = &[
    Suite {
        package: "ember-cpu",
        selection: &["--lib"],
        filters: &[
            "gemm::lanes::",
            "gemm::tests::gemm_edges_match_definition",
            "gemm::tests::the_tile_follows_the_columns",
            "gemm::tests::every_level_lists_its_tiles",
            "isa::",
            "ops::nn::rnn::",
            "ops::quant::add::",
            "ops::quant::mul::",
            "par::",
            "scratch::",
            "pool::tests::a_p",
            "pool::tests::every_part_of_a_buffer",
            "pool::tests::jobs_complete",
            "pool::tests::one_pool_serves",
            "pool::tests::workers_wake",
        ],
        rustflags: AVX2,
    },
    Suite {
        package: "ember-core",
        selection: &["--lib"],
        // The decoders' random-bytes agreement loops (tens of thousands of records) are left to the
        // full run; `ember-core` has no `unsafe` of its own.
        filters: &[
            "format::compact::tests::producer_bytes",
            "format::compact::tests::varint_limits",
            "format::decode::tests::refuses_kinds_outside_the_mask",
            "kernels::",
            "plan::",
            "schema::",
        ],
        rustflags: AVX2,
    },
    // Not `ember-cortex-m`: its only `unsafe` is the DSP instructions' `asm!`, compiled for Arm cores
    // alone; on the host its tests run the portable emulation, safe code in which Miri finds nothing the
    // normal test run would not (the full run keeps the suite; it took 56 s of CI's Miri step).
];

/// Makes sure nightly has Miri and the standard library's source (Miri builds its own sysroot).
fn tools() -> Result<()> {
    let installed = crate::output(
        "rustup",
        &["component", "list", "--toolchain", "nightly", "--installed"],
    )
    .unwrap_or_default();
    if !installed.contains("miri") || !installed.contains("rust-src") {
        if crate::output("rustup", &["run", "nightly", "rustc", "--version"]).is_err() {
            crate::run(
                "rustup",
                &["toolchain", "install", "nightly", "--profile", "minimal"],
            )?;
        }
        crate::run(
            "rustup",
            &[
                "component",
                "add",
                "miri",
                "rust-src",
                "--toolchain",
                "nightly",
            ],
        )?;
    }
    Ok(())
}

/// Runs every suite, or with `ci` CI's subset.
pub fn run(root: &Path, ci: bool) -> Result<()> {
    tools()?;
    for s in if ci { CI_SUITES } else { SUITES } {
        let mut cmd = Command::new("cargo");
        cmd.current_dir(root)
            .args(["+nightly", "miri", "test", "-p", s.package])
            .args(s.selection)
            // Miri's own target directory, apart from the normal build's.
            .env("CARGO_TARGET_DIR", root.join("target/miri"))
            // Property tests: a few cases each (Miri is slow; the normal suites run hundreds).
            .env("PROPTEST_CASES", "4")
            // Tests that ask the machine for its worker count or read files need the host.
            .env("MIRIFLAGS", "-Zmiri-disable-isolation")
            .env("RUSTFLAGS", s.rustflags);
        if !s.filters.is_empty() {
            cmd.arg("--").args(s.filters);
        }
        println!(
            "\n==> miri: {} {}{}",
            s.package,
            s.selection.join(" "),
            if s.rustflags.is_empty() {
                String::new()
            } else {
                format!(" ({})", s.rustflags)
            }
        );
        crate::run_command(&mut cmd)?;
    }
    Ok(())
}
