//! The pass log of `tests/models/digits` (`ConvertReport::passes`): the import, every pass
//! application and the lowering are recorded, with the Relu fusions and the layout's transposes.

use crate::common;

use std::path::PathBuf;

use common::*;
use ember_convert::{convert, ConvertOptions, PassRecord};

fn digits_log() -> Vec<PassRecord> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models/digits/model.onnx");
    let onnx = std::fs::read(path).expect("model.onnx is in the repository");
    let converted = convert(&onnx, &ConvertOptions::default()).expect("digits converts");
    converted.report.passes
}

/// Every change line of the records of pass `name`.
fn changes_of<'a>(log: &'a [PassRecord], name: &str) -> Vec<&'a str> {
    log.iter()
        .filter(|r| r.name == name)
        .flat_map(|r| r.changes.iter().map(String::as_str))
        .collect()
}

fn dump(log: &[PassRecord]) -> String {
    log.iter()
        .map(|r| {
            format!(
                "{} {} r{} {}->{} {:?}",
                r.stage, r.name, r.round, r.nodes_before, r.nodes_after, r.changes
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn node_counts_chain_from_the_import_to_the_blob() {
    let log = digits_log();
    let all = dump(&log);
    let first = log.first().expect("the log has records");
    assert_eq!(
        (first.stage, first.name, first.round),
        ("import", "onnx", 0)
    );
    let last = log.last().expect("the log has records");
    assert_eq!((last.stage, last.name), ("lower", "blob"));
    for pair in log.windows(2) {
        assert_eq!(
            pair[1].nodes_before, pair[0].nodes_after,
            "{} after {}:\n{all}",
            pair[1].name, pair[0].name
        );
    }
    // A record with no changes kept the node count.
    for r in log.iter().filter(|r| r.changes.is_empty()) {
        assert_eq!(r.nodes_before, r.nodes_after, "{all}");
    }
    // Each fixed-point stage ends with a round in which no pass changed anything.
    for stage in ["clean-up", "tidy-up"] {
        let rounds: Vec<&PassRecord> = log.iter().filter(|r| r.stage == stage).collect();
        let last_round = rounds.iter().map(|r| r.round).max().expect("stage ran");
        assert!(
            rounds
                .iter()
                .filter(|r| r.round == last_round)
                .all(|r| r.changes.is_empty()),
            "{all}"
        );
    }
}

#[test]
fn the_relu_fusions_are_logged() {
    let log = digits_log();
    let fused = changes_of(&log, "fuse_activation");
    for line in [
        "conv1 + relu1 -> conv1+relu1",
        "conv2 + relu2 -> conv2+relu2",
        "fc1 + relu3 -> fc1+relu3",
    ] {
        assert!(
            fused.contains(&line),
            "{line:?} not in {fused:#?}\n{}",
            dump(&log)
        );
    }
    let r = log
        .iter()
        .find(|r| r.name == "fuse_activation" && !r.changes.is_empty())
        .expect("a fusion round");
    assert_eq!(r.nodes_after, r.nodes_before - 3, "{}", dump(&log));
}

#[test]
fn the_transposes_inserted_and_removed_are_logged() {
    let log = digits_log();
    let all = dump(&log);
    let layout = changes_of(&log, "layout");
    for line in [
        "transpose input.to_nhwc inserted: Transpose[0, 2, 3, 1]",
        "transpose pool2.to_nchw inserted: Transpose[0, 3, 1, 2]",
    ] {
        assert!(layout.contains(&line), "{line:?} not in:\n{all}");
    }
    // The input has one channel: its NCHW -> NHWC transpose moves no bytes.
    assert!(
        changes_of(&log, "transposes").contains(
            &"transpose input.to_nhwc removed: it moves only size-1 dims, now a free Reshape"
        ),
        "{all}"
    );
}

/// Conv, BatchNorm (its scale computed by a Reshape of a constant), Relu, and a Transpose to NHWC
/// that cancels the layout pass's transpose back to NCHW.
#[test]
fn batch_norm_folding_constants_and_cancelled_transposes_are_logged() {
    let c = 4;
    let m = model(
        13,
        vec![
            node1("Reshape", "scale_of", &["s0", "s_shape"], "s"),
            node1("Conv", "conv", &["x", "w"], "c"),
            node1(
                "BatchNormalization",
                "bn",
                &["c", "s", "b", "mean", "var"],
                "n",
            ),
            node1("Relu", "relu", &["n"], "r"),
            node(
                "Transpose",
                "to_nhwc",
                &["r"],
                &["y"],
                vec![attr_ints("perm", &[0, 2, 3, 1])],
            ),
        ],
        vec![fixed("x", &[1, 3, 5, 5])],
        vec![unshaped("y")],
        vec![
            floats("w", &[c, 3, 3, 3], &pseudo_random(108, 1)),
            floats("s0", &[1, c], &[1.0, 2.0, 0.5, 1.5]),
            ints("s_shape", &[c]),
            floats("b", &[c], &[0.1, 0.2, 0.3, 0.4]),
            floats("mean", &[c], &[0.0, 0.1, -0.1, 0.2]),
            floats("var", &[c], &[1.0, 0.5, 2.0, 1.0]),
        ],
    );
    let converted = convert(&m, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let log = converted.report.passes;
    let all = dump(&log);
    assert_eq!((log[0].nodes_before, log[0].nodes_after), (5, 4), "{all}");
    assert!(
        log[0].changes[0].contains("folded into constants: scale_of (Reshape)"),
        "{all}"
    );
    assert!(
        changes_of(&log, "fold_batch_norm").contains(&"BatchNorm bn folded into conv -> conv+bn"),
        "{all}"
    );
    assert!(
        changes_of(&log, "fuse_activation").contains(&"conv+bn + relu -> conv+bn+relu"),
        "{all}"
    );
    let tidy: Vec<&str> = log
        .iter()
        .filter(|r| r.stage == "tidy-up")
        .flat_map(|r| r.changes.iter().map(String::as_str))
        .collect();
    assert!(
        tidy.contains(&"transpose to_nhwc cancelled (now an identity)"),
        "{all}"
    );
    assert!(
        tidy.iter()
            .any(|c| c.starts_with("transpose ") && c.ends_with(" removed")),
        "{all}"
    );
    for pair in log.windows(2) {
        assert_eq!(pair[1].nodes_before, pair[0].nodes_after, "{all}");
    }
    assert_eq!(converted.report.ops.len(), 2, "{all}");
}
