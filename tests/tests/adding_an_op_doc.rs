//! `docs/adding-an-op.md` walks through an op that exists (LayerNorm): every code block that names a
//! file on its first line (`// core/src/op_set.rs`) must still be in that file, so the example cannot
//! drift from the code. In a block, `// ...` stands for lines left out: the parts between must appear
//! in the file in that order, each as consecutive lines (compared without their indentation).

use std::path::Path;

/// The code blocks of a Markdown page that open with a `// path` line: the path and the block's lines.
fn file_blocks(page: &str) -> Vec<(String, Vec<&str>)> {
    let mut blocks = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with("```rust") {
            continue;
        }
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        let Some((first, rest)) = body.split_first() else {
            continue;
        };
        if let Some(path) = first.trim().strip_prefix("// ") {
            if path.contains('/') && path.ends_with(".rs") {
                blocks.push((path.to_string(), rest.to_vec()));
            }
        }
    }
    blocks
}

/// Whether `parts`, each a run of consecutive lines, appear in `file` in order (indentation ignored).
fn contains_in_order(file: &str, parts: &[Vec<&str>]) -> Result<(), String> {
    let lines: Vec<&str> = file.lines().map(str::trim).collect();
    let mut from = 0;
    for part in parts {
        let part: Vec<&str> = part.iter().map(|l| l.trim()).collect();
        let found = (from..=lines.len().saturating_sub(part.len()))
            .find(|&i| lines[i..i + part.len()] == part[..]);
        match found {
            Some(i) => from = i + part.len(),
            None => return Err(part.join("\n")),
        }
    }
    Ok(())
}

#[test]
fn the_worked_example_is_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let page = std::fs::read_to_string(root.join("docs/adding-an-op.md")).unwrap();
    let blocks = file_blocks(&page);
    assert!(
        blocks.len() >= 5,
        "docs/adding-an-op.md has {} code blocks that name their file",
        blocks.len()
    );
    for (path, lines) in blocks {
        let file = std::fs::read_to_string(root.join(&path)).unwrap_or_else(|e| {
            panic!("docs/adding-an-op.md quotes {path}, which cannot be read: {e}")
        });
        let parts: Vec<Vec<&str>> = lines
            .split(|l| l.trim() == "// ...")
            .map(|part| part.to_vec())
            .filter(|part| !part.is_empty())
            .collect();
        if let Err(missing) = contains_in_order(&file, &parts) {
            panic!("docs/adding-an-op.md quotes {path}, which no longer has (in this order):\n{missing}");
        }
    }
}

/// Every op kind of the format has its row in `docs/format.md`'s op table, at its tag: a kind added
/// to the declaration (`core/src/op_set.rs`) without its documented encoding fails here.
#[test]
fn every_op_kind_has_its_row_in_the_format_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let page = std::fs::read_to_string(root.join("docs/format.md")).unwrap();
    let missing: Vec<String> = ember_core::schema::KIND_NAMES
        .iter()
        .enumerate()
        .map(|(tag, name)| format!("| {tag} | {name} |"))
        .filter(|row| !page.lines().any(|l| l.starts_with(row.as_str())))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/format.md's op table lacks the rows that start {missing:?}"
    );
}

/// The check itself finds a block that is not in its file.
#[test]
fn a_block_that_is_not_in_its_file_is_found() {
    let file = "fn a() {\n    b();\n}\n\nfn c() {}\n";
    assert!(contains_in_order(file, &[vec!["fn a() {", "b();"], vec!["fn c() {}"]]).is_ok());
    assert!(contains_in_order(file, &[vec!["fn c() {}"], vec!["fn a() {"]]).is_err());
    assert!(contains_in_order(file, &[vec!["fn a() {", "}", "b();"]]).is_err());
    let page = "text\n\n```rust\n// core/src/x.rs\nfn a() {}\n```\n\n```rust\nlet y = 1;\n```\n";
    assert_eq!(
        file_blocks(page),
        vec![("core/src/x.rs".to_string(), vec!["fn a() {}"])]
    );
}
