//! The parsing of the firmware's output and its comparison with the host's, without QEMU.

use super::*;

/// What `qemu-lm3s6965` prints for three images, with a line of QEMU's own first.
const OUTPUT: &str = "Timer with period zero, disabling
model ops=10 blob_bytes=15600 weights_bytes=14640
op 0 Reshape ticks=3364
op 1 Conv2d ticks=585035
pred 0 2
pred 1 7
pred 2 3
accuracy 2/3
memory arena_bytes=2575 used_bytes=2560
inference images=3 ticks=6000000 ticks_per_second=12500000
stack peak_bytes=6484 size_bytes=65520
";

/// onnxruntime's top-1 and the labels for a four-image test set.
fn host(top1: [usize; 4]) -> HostResults {
    HostResults {
        source: "onnxruntime",
        top1: top1.to_vec(),
        labels: vec![2, 7, 5, 1],
    }
}

#[test]
fn every_line_kind_parses() {
    let r = Report::parse(OUTPUT).unwrap();
    assert_eq!(r.predictions, [2, 7, 3]);
    assert_eq!(r.accuracy, (2, 3));
    assert_eq!(r.memory["arena_bytes"], 2575);
    assert_eq!(r.stack["peak_bytes"], 6484);
    assert_eq!(r.ops[1], (1, "Conv2d".to_string(), 585035));
    assert_eq!(r.inference, Some((3, 6_000_000, 12_500_000)));
}

#[test]
fn a_firmware_with_fewer_images_is_compared_on_those() {
    let c = host([2, 7, 3, 1])
        .compare(&Report::parse(OUTPUT).unwrap())
        .unwrap();
    assert_eq!((c.images, c.correct, c.host_correct), (3, 2, 2));
    assert!(c.disagree.is_empty());
    c.agrees("onnxruntime").unwrap();
}

#[test]
fn a_different_top1_fails() {
    let c = host([2, 1, 3, 1])
        .compare(&Report::parse(OUTPUT).unwrap())
        .unwrap();
    assert_eq!(c.disagree, [(1, 7, 1)]);
    let e = c.agrees("onnxruntime").unwrap_err().to_string();
    assert!(e.contains("image 1: firmware 7 vs host 1"), "{e}");
    assert!(e.contains("those of onnxruntime"), "{e}");
}

#[test]
fn a_missing_prediction_fails() {
    let e = Report::parse(&OUTPUT.replace("pred 1 7\n", ""))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no prediction for image 1"), "{e}");
}

#[test]
fn an_accuracy_line_that_does_not_add_up_fails() {
    let report = Report::parse(&OUTPUT.replace("accuracy 2/3", "accuracy 3/3")).unwrap();
    assert!(host([2, 7, 3, 1]).compare(&report).is_err());
}

#[test]
fn more_images_than_the_test_set_fails() {
    let output = OUTPUT.replace("accuracy 2/3", "pred 3 1\npred 4 0\naccuracy 3/5");
    let report = Report::parse(&output).unwrap();
    assert!(host([2, 7, 3, 1]).compare(&report).is_err());
}
