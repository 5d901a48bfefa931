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

/// The loop's arena holds the graph around the loop and one iteration of its body, planned together:
/// no more than the two planned apart (the graph around it with the loop's values made without one,
/// and the body as a model of its own), since the body's buffers share bytes with the values dead
/// while it runs. Printed: the three plans.
#[test]
fn a_loops_arena_is_at_most_the_graph_around_it_plus_its_body() {
    let arena = |case: &str| convert_case(case).report.arena.activation_bytes;
    let (whole, outer, body) = (
        arena("loop_conv"),
        arena("loop_conv_outer"),
        arena("loop_conv_body"),
    );
    println!("loop_conv activations: {whole} B; around the loop {outer} B, the body {body} B");
    assert!(whole <= outer + body, "{whole} > {outer} + {body}");
    // One iteration's worth, not three: the body's buffers are planned once.
    assert!(whole < outer + 3 * body);
}

/// A trip count computed from the input at run time, bounded by --max-trip, and a condition the
/// body computes.
#[test]
fn loop_with_a_run_time_trip_count() {
    check_case_with("loop_dynamic", &max_trip("loop", 8), 1e-5);
}

/// A run whose trip count is above the --max-trip the loop was converted for is an error naming the
/// bound, not a truncated loop.
#[test]
fn a_trip_count_past_the_bound_is_an_error() {
    use ember_core::{AlignedBuf, Error, Model, Session};
    let c = convert_case_with("loop_dynamic", &max_trip("loop", 2));
    let (_, x) = read_npy("loop_dynamic.x.npy");
    // The case's trip count: the ceiling of the input's sum.
    let trip = x.iter().sum::<f32>().ceil();
    assert!(trip > 2.0, "the case runs {trip} iterations");
    let blob = AlignedBuf::from_bytes(&c.blob);
    let model = Model::parse(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    s.input(0).unwrap().write_f32(&x).unwrap();
    match s.run() {
        Err(e @ Error::LoopBound { bound: 2, .. }) => {
            assert!(e.to_string().contains("--max-trip"), "{e}");
        }
        other => panic!("want Error::LoopBound, got {other:?}"),
    }
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
