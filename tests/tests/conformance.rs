//! The ONNX node tests against the allow-list (`tests/conformance/node.txt`): every listed case must
//! convert, run and match its expected outputs, and no case at all may panic the converter or the
//! runtime (the whole suite takes about a second in a debug build). Skips, with a message, when the
//! node tests are not installed (`cargo xtask venv` installs them).

use std::path::Path;

use ember_tests::conformance::manifest::Manifest;
use ember_tests::conformance::report::one_line;
use ember_tests::conformance::{find_node_dir, list_cases, run_cases, Counts, Outcome};

#[test]
fn manifest_cases_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let Some(node_dir) = find_node_dir(root) else {
        eprintln!(
            "SKIPPED: no ONNX node tests under target/venv (run `cargo xtask venv` to install them)"
        );
        return;
    };
    let path = root.join("tests/conformance/node.txt");
    let text = std::fs::read_to_string(&path).expect("tests/conformance/node.txt is in the repo");
    let manifest = Manifest::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases = list_cases(&node_dir).expect("the node-test folder is readable");
    let missing: Vec<&String> = manifest
        .entries
        .keys()
        .filter(|c| !cases.contains(c))
        .collect();
    assert!(
        missing.is_empty(),
        "manifest cases with no case folder: {missing:?}"
    );

    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results = run_cases(
        &node_dir,
        &cases,
        &|c| manifest.config(c),
        &ember_tests::conformance::case::cpu_reference,
        threads,
        &|_, _| {},
    );
    let line = |r: &ember_tests::conformance::CaseResult| {
        let m = one_line(r.outcome.message());
        format!("{} ({}): {} {m}", r.name, r.op, r.outcome.kind())
    };
    let listed = results
        .iter()
        .filter(|r| manifest.entries.contains_key(&r.name));
    let bad: Vec<String> = listed
        .filter(|r| r.outcome != Outcome::Pass)
        .map(line)
        .collect();
    let panics: Vec<String> = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Panic(_)))
        .map(line)
        .collect();
    let c = Counts::of(&results);
    eprintln!(
        "{} of {} manifest cases pass; all {} cases: {} passed, {} panic",
        manifest.entries.len() - bad.len(),
        manifest.entries.len(),
        c.cases,
        c.pass,
        c.panic
    );
    assert!(
        bad.is_empty(),
        "manifest cases that no longer pass:\n{}",
        bad.join("\n")
    );
    assert!(
        panics.is_empty(),
        "cases that panic:\n{}",
        panics.join("\n")
    );
}
