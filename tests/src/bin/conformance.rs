//! `conformance`: runs the ONNX backend node tests through Ember and prints passed / failed /
//! unsupported / error / panic counts, overall and per op. `cargo xtask conformance` runs it; see
//! `tests/conformance/README.md`.
//!
//! Exit status: 0 when every manifest case that was run passes and no case panics; 1 otherwise;
//! 2 on bad arguments or missing files.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use ember_tests::conformance::case::cpu_reference;
use ember_tests::conformance::manifest::Manifest;
use ember_tests::conformance::report::{one_line, Report};
use ember_tests::conformance::{find_node_dir, list_cases, run_cases, Outcome};

const USAGE: &str = "usage: conformance [--regen] [--allow-list] [--filter SUBSTRING] [--verbose]
                   [--node-dir DIR] [--manifest FILE] [--report FILE] [--threads N]
  --allow-list   run only the cases listed in the manifest (what CI enforces)
  --regen        rewrite the manifest with every passing case (flags of kept lines are kept)
  --filter S     run only the cases whose name contains S
  --verbose      print every case that does not pass, with its message
  --node-dir     the onnx node-test folder (default: found under target/venv)
  --manifest     default tests/conformance/node.txt
  --report       default target/conformance/report.md
  --threads      worker threads (default: available parallelism)";

struct Args {
    root: PathBuf,
    regen: bool,
    allow_list: bool,
    filter: Option<String>,
    verbose: bool,
    node_dir: Option<PathBuf>,
    manifest: PathBuf,
    report: PathBuf,
    threads: usize,
}

fn parse_args(root: &Path) -> Result<Args, String> {
    let mut a = Args {
        root: root.to_path_buf(),
        regen: false,
        allow_list: false,
        filter: None,
        verbose: false,
        node_dir: None,
        manifest: root.join("tests/conformance/node.txt"),
        report: root.join("target/conformance/report.md"),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--regen" => a.regen = true,
            "--allow-list" => a.allow_list = true,
            "--verbose" | "-v" => a.verbose = true,
            "--filter" => a.filter = Some(value("--filter")?),
            "--node-dir" => a.node_dir = Some(value("--node-dir")?.into()),
            "--manifest" => a.manifest = value("--manifest")?.into(),
            "--report" => a.report = value("--report")?.into(),
            "--threads" => {
                a.threads = value("--threads")?
                    .parse()
                    .map_err(|_| "--threads needs a number".to_string())?
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.regen && (a.allow_list || a.filter.is_some()) {
        return Err("--regen needs the full run: drop --allow-list and --filter".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let args = match parse_args(&root) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("conformance: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("conformance: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs and reports; `Ok(false)` when a manifest case does not pass or a case panics.
fn run(args: &Args) -> Result<bool, String> {
    let node_dir = match &args.node_dir {
        Some(d) => d.clone(),
        None => find_node_dir(&args.root).ok_or(
            "no ONNX node tests found under target/venv: run `cargo xtask venv` first, or pass \
             --node-dir",
        )?,
    };
    let all =
        list_cases(&node_dir).map_err(|e| format!("cannot list {}: {e}", node_dir.display()))?;
    let text = std::fs::read_to_string(&args.manifest).unwrap_or_default();
    let manifest =
        Manifest::parse(&text).map_err(|e| format!("{}: {e}", args.manifest.display()))?;

    let cases: Vec<String> = all
        .iter()
        .filter(|c| !args.allow_list || manifest.entries.contains_key(*c))
        .filter(|c| args.filter.as_deref().is_none_or(|f| c.contains(f)))
        .cloned()
        .collect();
    eprintln!(
        "conformance: {} of {} cases from {}",
        cases.len(),
        all.len(),
        node_dir.display()
    );
    let tty = std::io::stderr().is_terminal();
    let start = Instant::now();
    let results = run_cases(
        &node_dir,
        &cases,
        &|c| manifest.config(c),
        &cpu_reference,
        args.threads,
        &|done, total| {
            if tty && (done % 25 == 0 || done == total) {
                eprint!("\r  {done}/{total}");
                if done == total {
                    eprintln!();
                }
            }
        },
    );
    let report = Report {
        results: &results,
        manifest: &manifest,
        secs: start.elapsed().as_secs_f64(),
        threads: args.threads,
    };

    if args.verbose {
        for r in results.iter().filter(|r| r.outcome != Outcome::Pass) {
            println!(
                "{:<11} {} ({}): {}",
                r.outcome.kind(),
                r.name,
                r.op,
                one_line(r.outcome.message())
            );
        }
        println!();
    }
    if !args.allow_list {
        println!("{}", report.op_table_text());
    }
    let missing = report.missing(&all);
    if !missing.is_empty() {
        println!(
            "manifest cases with no case folder ({}): {}",
            missing.len(),
            missing.join(", ")
        );
    }
    let regressions = report.regressions();
    for r in &regressions {
        println!(
            "REGRESSION {} ({}): {} {}",
            r.name,
            r.op,
            r.outcome.kind(),
            one_line(r.outcome.message())
        );
    }
    let panics = report.panics();
    for r in &panics {
        println!(
            "PANIC {} ({}): {}",
            r.name,
            r.op,
            one_line(r.outcome.message())
        );
    }
    println!("{}", report.totals_line());
    println!("{}", report.manifest_line());
    println!("panics: {}", panics.len());
    if !args.allow_list {
        println!(
            "{} passing cases not yet in the manifest (add them with --regen)",
            report.new_passes().len()
        );
    }

    // The report covers the whole suite; an allow-list run leaves the last full one in place.
    if !args.allow_list {
        if let Some(dir) = args.report.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(&args.report, report.markdown())
            .map_err(|e| format!("cannot write {}: {e}", args.report.display()))?;
        println!("report: {}", args.report.display());
    }

    if args.regen {
        let passing = results
            .iter()
            .filter(|r| r.outcome == Outcome::Pass)
            .map(|r| (r.name.as_str(), r.needed_flag.as_deref()));
        let new = manifest.regenerate(passing);
        std::fs::write(&args.manifest, new.render())
            .map_err(|e| format!("cannot write {}: {e}", args.manifest.display()))?;
        println!(
            "manifest: {} now lists {} cases (was {})",
            args.manifest.display(),
            new.entries.len(),
            manifest.entries.len()
        );
        return Ok(panics.is_empty());
    }
    Ok(panics.is_empty() && regressions.is_empty() && missing.is_empty())
}
