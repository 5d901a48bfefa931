//! Detection post-processing against onnxruntime: the `post_processing` model of `tests/models/ops/`
//! (made by `post_processing.py` there) ranks scores with TopK, picks box data with GatherElements and
//! GatherND (batch_dims 1) and scatters with ScatterElements (add) and ScatterND, through convert and
//! a session.

mod common;

use common::golden::*;

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
