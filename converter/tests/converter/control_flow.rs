//! Control flow against onnxruntime: the models made by `tests/models/ops/control_cases.py` (Loop with
//! a constant and a run-time trip count, nested loops, Scan both ways, If on a run-time and on a
//! constant condition) are converted, run through an ember-core `Session`, and compared within 1e-5 of
//! the output's largest value.

use crate::common;

use common::golden::*;
use ember_convert::ConvertOptions;

fn max_trip(name: &str, n: usize) -> ConvertOptions {
    ConvertOptions {
        max_trips: vec![(name.to_string(), n)],
        ..ConvertOptions::default()
    }
}

/// A Loop of a constant 3 iterations whose body holds a convolution: the body's ops run between the
/// loop's head and end, once each in the blob.
#[test]
fn loop_with_a_convolution_in_its_body() {
    let c = check_case("loop_conv");
    let ops = op_names(&c);
    assert_eq!(ops.iter().filter(|&&o| o == "Conv2d").count(), 1, "{ops:?}");
    assert!(ops.contains(&"Loop") && ops.contains(&"EndLoop") && ops.contains(&"ScanWrite"));
}

/// A trip count computed from the input at run time, bounded by --max-trip, and a condition the
/// body computes.
#[test]
fn loop_with_a_run_time_trip_count() {
    check_case_with("loop_dynamic", &max_trip("loop", 8), 1e-5);
}

/// Without --max-trip, a run-time trip count is an error that names the option.
#[test]
fn a_run_time_trip_count_needs_a_bound() {
    let bytes = std::fs::read(case_path("loop_dynamic.onnx")).unwrap();
    let e = match ember_convert::convert(&bytes, &ConvertOptions::default()) {
        Ok(_) => panic!("a run-time trip count without --max-trip converted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("--max-trip loop=N"), "{e}");
}

#[test]
fn nested_loops() {
    let c = check_case("loop_nested");
    assert_eq!(op_names(&c).iter().filter(|&&o| o == "Loop").count(), 2);
}

#[test]
fn scan_forwards_and_backwards() {
    check_case("scan_both_ways");
}

/// One model, the branch taken decided by the input's sign at run time.
#[test]
fn if_takes_either_branch_at_run_time() {
    let c = check_case("if_then");
    assert!(op_names(&c).contains(&"Branch"));
    check_case("if_else");
}

/// A condition that is a constant once shapes are static: the branch taken alone, no control op.
#[test]
fn if_on_a_constant_condition_is_the_branch_taken() {
    let c = check_case("if_const");
    assert_ops(&c, &["Sigmoid"]);
}
