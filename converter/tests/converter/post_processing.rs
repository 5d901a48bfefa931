//! Detection post-processing against onnxruntime: the `post_processing` model of `tests/models/ops/`
//! (made by `post_processing.py` there) ranks scores with TopK, picks box data with GatherElements and
//! GatherND (batch_dims 1) and scatters with ScatterElements (add) and ScatterND, through convert and
//! a session.

use crate::common;

use common::golden::*;
use ember_convert::{convert, ConvertError, ConvertOptions, Converted};

#[test]
fn post_processing_matches_onnxruntime() {
    let c = check_case_within("post_processing", 1e-6);
    for op in ["TopK", "GatherScatterElements", "GatherScatterNd"] {
        assert!(
            op_names(&c).contains(&op),
            "{op} missing from {:?}",
            op_names(&c)
        );
    }
}

/// `detect_post`: TopK, then NonMaxSuppression on the top boxes, whose count depends on the data.
fn detect_post_with(max_counts: Vec<(String, usize)>) -> Result<Converted, ConvertError> {
    let bytes = std::fs::read(case_path("detect_post.onnx")).expect("model is in the repository");
    let opts = ConvertOptions {
        max_counts,
        ..ConvertOptions::default()
    };
    convert(&bytes, &opts)
}

#[test]
fn detect_post_matches_onnxruntime_with_room_to_spare() {
    let c = detect_post_with(vec![("selected".into(), 5)]).expect("converts");
    let (_, x) = read_npy("detect_post.x.npy");
    let (ys, y) = read_npy("detect_post.y.npy");
    assert_eq!(ys, [3, 3], "onnxruntime selects 3 boxes");
    assert_eq!(c.report.outputs[0].1, [5, 3], "room for 5");
    let got = run(&c, &x);
    // The 3 rows onnxruntime selects, in its order, then -1 in the 2 rows left.
    assert_eq!(got[..9], y[..]);
    assert_eq!(got[9..], [-1.0; 6]);
}

#[test]
fn detect_post_without_a_max_count_names_the_option() {
    let err = detect_post_with(Vec::new()).unwrap_err().to_string();
    assert!(err.contains("--max-count selected=N"), "{err}");
    let by_node_name = detect_post_with(vec![("nope".into(), 5)])
        .unwrap_err()
        .to_string();
    assert!(by_node_name.contains("NonMaxSuppression"), "{by_node_name}");
    assert_eq!(
        ConvertOptions::parse_max_count("selected=100"),
        Ok(("selected".to_string(), 100))
    );
    assert!(ConvertOptions::parse_max_count("selected").is_err());
    assert!(ConvertOptions::parse_max_count("=3").is_err());
}
