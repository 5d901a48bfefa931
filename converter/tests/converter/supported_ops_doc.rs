//! `docs/supported-ops.md` is generated from the importer table; this test fails when it is stale and
//! rewrites it with `EMBER_BLESS=1`.

use std::path::Path;

#[test]
fn supported_ops_page_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/supported-ops.md");
    let want = ember_convert::onnx::ops::supported_ops_markdown();
    assert!(
        !want.contains("| `converter/src/onnx/ops/?.rs`"),
        "an op has no importer path:\n{want}"
    );
    for op in ember_convert::onnx::ops::supported_ops() {
        let rel = want
            .lines()
            .find(|l| l.starts_with(&format!("| {op} |")))
            .and_then(|l| l.split('`').nth(1))
            .unwrap_or_default();
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(rel)
                .exists(),
            "{op}: {rel} missing"
        );
    }
    if std::env::var_os("EMBER_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        have, want,
        "docs/supported-ops.md is stale: run EMBER_BLESS=1 cargo test -p ember-convert --test converter supported_ops_doc"
    );
}

/// Every op kind the runtime declares (`core/src/op_set.rs`) has an importer entry: the blob ops of the
/// importer table are the runtime's kinds, in their order, each with an ONNX op that leads to it. An op
/// declared in the runtime without its importer fails here.
#[test]
fn every_op_of_the_runtime_has_an_importer() {
    let sources = ember_convert::onnx::ops::blob_op_sources();
    let kinds: Vec<&str> = sources.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(
        kinds,
        ember_core::schema::KIND_NAMES,
        "the importer table's blob ops (BLOB_OPS in converter/src/onnx/ops/mod.rs) are not the runtime's"
    );
    for (kind, ops) in &sources {
        assert!(!ops.is_empty(), "no ONNX op leads to {kind}");
    }
}
