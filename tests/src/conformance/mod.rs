//! The ONNX backend node-test conformance harness.
//!
//! Every case folder of `onnx/backend/test/data/node/` (shipped by `onnx==1.22.0`, installed in
//! `target/venv`) is converted with `ember_convert::convert`, run with `ember_core::Session`, and
//! compared with its expected outputs ([`case`]). Each case ends as one [`Outcome`]; panics of the
//! converter or the runtime are caught and counted on their own. [`manifest`] reads the allow-list
//! `tests/conformance/node.txt`, [`report`] prints and writes the summary. `cargo xtask conformance`
//! drives it through the `conformance` binary of this crate.

pub mod case;
pub mod compare;
pub mod manifest;
pub mod report;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use compare::Tolerance;

/// How a case is run: its manifest flags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CaseConfig {
    /// Comparison tolerance (`rtol=`, `atol=`).
    pub tol: Tolerance,
    /// The inputs kept at run time (`input=x,y`; float ones, or an integer one to keep it there);
    /// the other float inputs are folded into the model as constants. `None`: all at run time, with
    /// the retry described in [`case`].
    pub inputs: Option<Vec<String>>,
}

/// How one case ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every output matched within tolerance.
    Pass,
    /// It ran, but an output differs (the message has the largest difference) or has the wrong shape.
    Fail(String),
    /// The converter declined an op, attribute or element type, or the case needs a dtype the runtime
    /// lacks.
    Unsupported(String),
    /// Any other conversion or runtime error.
    Error(String),
    /// The converter or the runtime panicked (message and location).
    Panic(String),
}

impl Outcome {
    /// Short lower-case name: pass, fail, unsupported, error, panic.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail(_) => "fail",
            Outcome::Unsupported(_) => "unsupported",
            Outcome::Error(_) => "error",
            Outcome::Panic(_) => "panic",
        }
    }

    /// The message, empty for a pass.
    pub fn message(&self) -> &str {
        match self {
            Outcome::Pass => "",
            Outcome::Fail(m) | Outcome::Unsupported(m) | Outcome::Error(m) | Outcome::Panic(m) => m,
        }
    }
}

/// The result of one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// Case folder name, e.g. `test_abs`.
    pub name: String,
    /// The ONNX op the case tests (see [`assign_ops`]).
    pub op: String,
    /// Op types of the model's nodes.
    pub node_ops: Vec<String>,
    /// Verdict.
    pub outcome: Outcome,
    /// The flag the case needed to pass (`input=x`), found by the retry.
    pub needed_flag: Option<String>,
    /// Wall time of the case, seconds.
    pub secs: f64,
}

/// The node-test folder: `$EMBER_ONNX_NODE_DIR` if set, else the one in
/// `<root>/target/venv/lib/python3*/site-packages/onnx/backend/test/data/node`.
pub fn find_node_dir(root: &Path) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("EMBER_ONNX_NODE_DIR") {
        return Some(PathBuf::from(d));
    }
    let lib = root.join("target").join("venv").join("lib");
    let mut pythons: Vec<PathBuf> = std::fs::read_dir(&lib)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3"))
        })
        .collect();
    pythons.sort();
    pythons
        .into_iter()
        .map(|p| p.join("site-packages/onnx/backend/test/data/node"))
        .find(|p| p.is_dir())
}

/// The case names (folder names) in `node_dir`, sorted.
pub fn list_cases(node_dir: &Path) -> std::io::Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(node_dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("model.onnx").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    Ok(v)
}

/// Stack of each worker thread.
const WORKER_STACK_BYTES: usize = 64 << 20;

thread_local! {
    /// The message and location of the last panic on this thread, recorded by the quiet hook.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `cases` (names in `node_dir`) on `threads` threads, each under `catch_unwind` with the panic
/// hook silenced (panic messages are recorded in the results instead). `config` gives each case's
/// flags. The process's panic hook is replaced while it runs, so run it from a test binary of its
/// own (other tests' panic messages would be swallowed meanwhile). `progress` is called after each case with (done, total).
pub fn run_cases(
    node_dir: &Path,
    cases: &[String],
    config: &(dyn Fn(&str) -> CaseConfig + Sync),
    runner: case::Runner<'_>,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<CaseResult> {
    let quiet = QuietPanics::install();

    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<CaseResult>> = Mutex::new(Vec::with_capacity(cases.len()));
    let mut started = 0;
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            // Deep recursion would overflow a small stack, which aborts the whole run instead of
            // failing one case: give the workers room.
            let worker = std::thread::Builder::new().stack_size(WORKER_STACK_BYTES);
            let spawned = worker.spawn_scoped(s, || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(name) = cases.get(i) else { break };
                let r = run_one(node_dir, name, &config(name), runner);
                // A worker only pushes; a poisoned lock means another worker panicked outside
                // catch_unwind, and its results are still valid.
                results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, cases.len());
            });
            match spawned {
                Ok(_) => started += 1,
                // No thread: the cases left are run by the workers that did start, or below.
                Err(_) => break,
            }
        }
    });
    // If not a single worker could start, run here.
    if started == 0 {
        for name in cases {
            let r = run_one(node_dir, name, &config(name), runner);
            results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
        }
    }
    drop(quiet);

    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by(|a, b| a.name.cmp(&b.name));
    assign_ops(&mut results);
    results
}

/// While alive, panics print nothing: their message and location go to [`LAST_PANIC`] of the
/// panicking thread, for [`guarded`] to pick up. Dropping it restores the previous hook.
struct QuietPanics {
    previous: Option<PanicHook>,
}

/// What `std::panic::take_hook` returns.
type PanicHook = Box<dyn Fn(&panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

impl QuietPanics {
    fn install() -> QuietPanics {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(|info| {
            let msg = payload_message(info.payload());
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
        }));
        QuietPanics {
            previous: Some(previous),
        }
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        if let Some(p) = self.previous.take() {
            panic::set_hook(p);
        }
    }
}

/// Runs `f`, turning a panic into `Err(message at file:line)`.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| payload_message(&*payload))
    })
}

fn run_one(node_dir: &Path, name: &str, cfg: &CaseConfig, runner: case::Runner<'_>) -> CaseResult {
    let t = Instant::now();
    let dir = node_dir.join(name);
    let (node_ops, outcome, needed_flag) = match guarded(|| case::run_case(&dir, cfg, runner)) {
        Ok(run) => (run.node_ops, run.outcome, run.needed_flag),
        Err(msg) => (Vec::new(), Outcome::Panic(msg), None),
    };
    CaseResult {
        name: name.to_string(),
        op: String::new(),
        node_ops,
        outcome,
        needed_flag,
        secs: t.elapsed().as_secs_f64(),
    }
}

fn payload_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Gives each result the op it tests: the op of a one-node model; for a multi-node model (the
/// `_expanded` function bodies), the op of the one-node case it expands, else the op whose name
/// (lower case, no underscores) is the longest prefix of the case name, else its first node's op.
/// A case whose model could not be read (a panic) borrows its op the same way, or is `?`.
pub fn assign_ops(results: &mut [CaseResult]) {
    let single: HashMap<String, String> = results
        .iter()
        .filter(|r| r.node_ops.len() == 1)
        .map(|r| (r.name.clone(), r.node_ops[0].clone()))
        .collect();
    let mut known: Vec<String> = single.values().cloned().collect();
    known.sort();
    known.dedup();
    for r in results.iter_mut() {
        r.op = if r.node_ops.len() == 1 {
            r.node_ops[0].clone()
        } else if let Some(op) = expanded_base(&r.name).and_then(|b| single.get(b)) {
            op.clone()
        } else if let Some(op) = longest_prefix_op(&r.name, &known) {
            op
        } else {
            r.node_ops.first().cloned().unwrap_or_else(|| "?".into())
        };
    }
}

/// `test_x_expanded` and `test_x_expanded_ver18` expand `test_x`.
fn expanded_base(name: &str) -> Option<&str> {
    name.find("_expanded").map(|p| &name[..p])
}

fn longest_prefix_op(case: &str, ops: &[String]) -> Option<String> {
    let squashed: String = case
        .trim_start_matches("test_")
        .chars()
        .filter(|&c| c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    ops.iter()
        .filter(|op| squashed.starts_with(&op.to_ascii_lowercase()))
        .max_by_key(|op| op.len())
        .cloned()
}

/// Counts per outcome kind over `results`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Cases run.
    pub cases: usize,
    /// Passed.
    pub pass: usize,
    /// Failed (numbers or shapes differ).
    pub fail: usize,
    /// Declined by the converter or needing an unsupported dtype.
    pub unsupported: usize,
    /// Other errors.
    pub error: usize,
    /// Panics.
    pub panic: usize,
}

impl Counts {
    /// Adds one outcome.
    pub fn add(&mut self, o: &Outcome) {
        self.cases += 1;
        match o {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail(_) => self.fail += 1,
            Outcome::Unsupported(_) => self.unsupported += 1,
            Outcome::Error(_) => self.error += 1,
            Outcome::Panic(_) => self.panic += 1,
        }
    }

    /// Counts over a set of results.
    pub fn of<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> Counts {
        let mut c = Counts::default();
        for r in results {
            c.add(&r.outcome);
        }
        c
    }
}

/// Counts per op, sorted by op name.
pub fn by_op(results: &[CaseResult]) -> BTreeMap<String, Counts> {
    let mut m: BTreeMap<String, Counts> = BTreeMap::new();
    for r in results {
        m.entry(r.op.clone()).or_default().add(&r.outcome);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, ops: &[&str]) -> CaseResult {
        CaseResult {
            name: name.into(),
            op: String::new(),
            node_ops: ops.iter().map(|s| s.to_string()).collect(),
            outcome: Outcome::Pass,
            needed_flag: None,
            secs: 0.0,
        }
    }

    #[test]
    fn panics_are_caught_with_their_location() {
        let quiet = QuietPanics::install();
        let r: Result<(), String> = guarded(|| panic!("boom {}", 7));
        drop(quiet);
        let msg = r.unwrap_err();
        assert!(
            msg.starts_with("boom 7 at ") && msg.contains("mod.rs"),
            "{msg}"
        );
        assert_eq!(guarded(|| 3), Ok(3));
    }

    #[test]
    fn ops_of_expanded_and_multi_node_cases() {
        let mut v = vec![
            r("test_layer_normalization_2d", &["LayerNormalization"]),
            r(
                "test_layer_normalization_2d_expanded_ver18",
                &["Constant", "ReduceMean"],
            ),
            r("test_convtranspose", &["ConvTranspose"]),
            r("test_conv_with_pads", &["Conv"]),
            r("test_convtranspose_3d_two", &["Constant", "ConvTranspose"]),
            r("test_strange", &["Mul", "Add"]),
        ];
        assign_ops(&mut v);
        let ops: Vec<&str> = v.iter().map(|r| r.op.as_str()).collect();
        assert_eq!(
            ops,
            [
                "LayerNormalization",
                "LayerNormalization",
                "ConvTranspose",
                "Conv",
                "ConvTranspose",
                "Mul"
            ]
        );
    }
}
