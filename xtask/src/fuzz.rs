//! `cargo xtask fuzz [--minutes N | --seconds N] [--only NAME[,NAME]]`: every fuzz target of `fuzz/`
//! (cargo-fuzz, libFuzzer, on the nightly toolchain) for the given time each, one after another, and a
//! report of executions, coverage and findings per target in `target/fuzz/report.md`.
//!
//! Each target starts from its committed corpus (`fuzz/corpus/<target>/`, plus `fuzz/seeds/<target>/`
//! where there is one) and grows a working corpus under `target/fuzz/corpus/<target>/`; a crash, a hang
//! (`-timeout`) or an allocation past the limit (`-malloc_limit_mb`, `-rss_limit_mb`) stops the target,
//! leaves its input under `target/fuzz/artifacts/<target>/` and fails the task. A finding, once fixed,
//! goes into the committed corpus, which `tests/tests/fuzz_corpus.rs` replays on stable in every test
//! run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The targets, as `fuzz/Cargo.toml` names its binaries (and `ember_tests::fuzz::TARGETS` its bodies).
pub const TARGETS: &[&str] = &[
    "blob",
    "blob_fields",
    "blob_firmware",
    "onnx",
    "onnx_fields",
    "tflite",
    "npy",
    "checkpoint",
];

/// libFuzzer's limits for one input: a single allocation, the whole process, and the time (seconds).
/// `ember_tests::fuzz::max_allocation` states the same allocation bound for the corpus replay.
const MALLOC_LIMIT_MB: u32 = 512;
const RSS_LIMIT_MB: u32 = 3072;
const TIMEOUT_S: u32 = 20;
/// The largest input libFuzzer makes (the committed blobs and models are below it).
const MAX_LEN: u32 = 256 << 10;

pub struct Options {
    seconds: u64,
    only: Option<String>,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut opts = Options {
            seconds: 60,
            only: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |what: &str| {
                it.next()
                    .with_context(|| format!("{a} needs {what}"))
                    .cloned()
            };
            match a.as_str() {
                "--minutes" => opts.seconds = 60 * value("a number of minutes")?.parse::<u64>()?,
                "--seconds" => opts.seconds = value("a number of seconds")?.parse::<u64>()?,
                "--only" => opts.only = Some(value("target names")?),
                _ => bail!(
                    "usage: cargo xtask fuzz [--minutes N | --seconds N] [--only NAME[,NAME]] \
                     (targets: {})",
                    TARGETS.join(", ")
                ),
            }
        }
        if opts.seconds == 0 {
            bail!("--minutes/--seconds must be at least 1 second");
        }
        if let Some(only) = &opts.only {
            for name in only.split(',') {
                if !TARGETS.contains(&name) {
                    bail!(
                        "no fuzz target {name:?}; the targets are {}",
                        TARGETS.join(", ")
                    );
                }
            }
        }
        Ok(opts)
    }
}

/// What one target's run printed at its end.
#[derive(Default)]
struct Stats {
    executions: u64,
    coverage: u64,
    features: u64,
    corpus: u64,
    peak_rss_mb: u64,
}

impl Stats {
    /// libFuzzer's last status line (`#N DONE cov: C ft: F corp: K/...`) and `-print_final_stats`.
    fn read(log: &str) -> Stats {
        let mut s = Stats::default();
        let field = |line: &str, key: &str| -> Option<u64> {
            let rest = line.split(key).nth(1)?;
            let word = rest.split_whitespace().next()?;
            word.split('/').next()?.parse().ok()
        };
        for line in log.lines() {
            if line.starts_with('#') && line.contains(" cov: ") {
                s.coverage = field(line, " cov: ").unwrap_or(s.coverage);
                s.features = field(line, " ft: ").unwrap_or(s.features);
                s.corpus = field(line, " corp: ").unwrap_or(s.corpus);
            }
            if let Some(v) = line.strip_prefix("stat::number_of_executed_units: ") {
                s.executions = v.trim().parse().unwrap_or(0);
            }
            if let Some(v) = line.strip_prefix("stat::peak_rss_mb: ") {
                s.peak_rss_mb = v.trim().parse().unwrap_or(0);
            }
        }
        s
    }
}

/// Makes sure the nightly toolchain and cargo-fuzz are there (installing cargo-fuzz if not).
fn tools() -> Result<()> {
    if crate::output("rustup", &["run", "nightly", "rustc", "--version"]).is_err() {
        crate::run(
            "rustup",
            &["toolchain", "install", "nightly", "--profile", "minimal"],
        )?;
    }
    if crate::output("cargo", &["fuzz", "--version"]).is_err() {
        crate::run(
            "cargo",
            &["install", "cargo-fuzz", "--locked", "--version", "^0.13"],
        )?;
    }
    Ok(())
}

fn fuzz_target_dir(root: &Path) -> PathBuf {
    root.join("target/fuzz/build")
}

pub fn run(root: &Path, opts: &Options) -> Result<()> {
    tools()?;
    let targets: Vec<&str> = match &opts.only {
        Some(only) => only.split(',').collect(),
        None => TARGETS.to_vec(),
    };
    let target_dir = fuzz_target_dir(root);
    let target_dir = target_dir.to_str().context("target path is not UTF-8")?;
    // One build of every target with sanitizers and coverage instrumentation (release, debug asserts).
    crate::run_command(
        Command::new("cargo")
            .current_dir(root)
            .args(["+nightly", "fuzz", "build", "-O", "--debug-assertions"])
            .args(["--target-dir", target_dir]),
    )?;
    let work = root.join("target/fuzz");
    let mut report = String::from(
        "| target | seconds | executions | coverage (edges) | features | corpus | peak RSS MiB | result |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
    );
    let mut failed = Vec::new();
    for t in &targets {
        let corpus = work.join("corpus").join(t);
        let artifacts = work.join("artifacts").join(t);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&artifacts)?;
        let mut dirs = vec![corpus, root.join("fuzz/corpus").join(t)];
        let seeds = root.join("fuzz/seeds").join(t);
        if seeds.is_dir() {
            dirs.push(seeds);
        }
        let log_path = work.join(format!("{t}.log"));
        let log = std::fs::File::create(&log_path)?;
        println!("\n==> fuzz {t} for {} s", opts.seconds);
        let start = Instant::now();
        let status = Command::new("cargo")
            .current_dir(root)
            .args(["+nightly", "fuzz", "run", "-O", "--debug-assertions"])
            .args(["--target-dir", target_dir, t])
            .args(&dirs)
            .arg("--")
            .arg(format!("-max_total_time={}", opts.seconds))
            .arg(format!("-malloc_limit_mb={MALLOC_LIMIT_MB}"))
            .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
            .arg(format!("-timeout={TIMEOUT_S}"))
            .arg(format!("-max_len={MAX_LEN}"))
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .arg("-print_final_stats=1")
            .stdout(log.try_clone()?)
            .stderr(log)
            .status()
            .context("cannot start cargo fuzz")?;
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let s = Stats::read(&text);
        let result = if status.success() {
            "no crash, hang or out-of-memory".to_string()
        } else {
            failed.push(*t);
            let why = text
                .lines()
                .find(|l| l.contains("ERROR: libFuzzer") || l.contains("panicked at"))
                .unwrap_or("see the log");
            format!(
                "FAILED: {why} (log {}, input under {})",
                log_path.display(),
                artifacts.display()
            )
        };
        println!(
            "{t}: {} executions in {:.0} s, coverage {} edges, {} features, corpus {}, peak RSS {} MiB: {result}",
            s.executions,
            start.elapsed().as_secs_f64(),
            s.coverage,
            s.features,
            s.corpus,
            s.peak_rss_mb
        );
        writeln!(
            report,
            "| {t} | {} | {} | {} | {} | {} | {} | {result} |",
            opts.seconds, s.executions, s.coverage, s.features, s.corpus, s.peak_rss_mb
        )?;
    }
    std::fs::write(work.join("report.md"), &report)?;
    println!("\n{report}\n(target/fuzz/report.md)");
    if !failed.is_empty() {
        bail!(
            "fuzz target(s) {} found a crash, hang or out-of-memory input",
            failed.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzer_final_figures() {
        let log = "#2\tINITED cov: 10 ft: 12 corp: 3/40b exec/s: 0 rss: 30Mb\n\
                   #5000\tDONE   cov: 1234 ft: 5678 corp: 91/2048Kb lim: 4096 exec/s: 250 rss: 120Mb\n\
                   Done 5000 runs in 20 second(s)\n\
                   stat::number_of_executed_units: 5000\n\
                   stat::peak_rss_mb:              120\n";
        let s = Stats::read(log);
        assert_eq!(
            (
                s.executions,
                s.coverage,
                s.features,
                s.corpus,
                s.peak_rss_mb
            ),
            (5000, 1234, 5678, 91, 120)
        );
    }

    #[test]
    fn options_name_real_targets() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            Options::parse(&args(&["--minutes", "2"])).unwrap().seconds,
            120
        );
        assert!(Options::parse(&args(&["--only", "blob,nope"])).is_err());
        assert!(Options::parse(&args(&["--seconds", "0"])).is_err());
        // The fuzz crate declares exactly these binaries.
        let manifest = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/Cargo.toml"),
        )
        .unwrap();
        let bins: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.strip_prefix("name = \""))
            .filter_map(|l| l.strip_suffix('"'))
            .filter(|n| *n != "ember-fuzz")
            .collect();
        assert_eq!(bins, TARGETS);
    }
}
