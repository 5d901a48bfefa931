//! `ember convert` never leaves a partial output file: not when the write fails (a full disk; here a
//! file-size limit, `RLIMIT_FSIZE`, makes the write fail the same way), and not when the process is
//! killed while writing (the same limit with its default signal, SIGXFSZ, kills it mid-write). In both
//! cases a previous output stays as it was.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{model, scratch_dir, text};

/// `ember convert` of the digits model to `out` under a 4 KiB file-size limit (the blob is larger),
/// with SIGXFSZ ignored (the write fails with EFBIG) or left to its default (the process is killed).
fn convert_limited(out: &Path, ignore_signal: bool) -> Output {
    let trap = if ignore_signal { "trap '' XFSZ; " } else { "" };
    let script = format!("{trap}exec prlimit --fsize=4096 \"$0\" convert \"$1\" -o \"$2\"",);
    Command::new("/bin/sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_ember")])
        .arg(model("digits/model.onnx"))
        .arg(out)
        .output()
        .expect("sh starts")
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_failed_write_leaves_the_previous_output_and_no_temporary_file() {
    let dir = scratch_dir("atomic-failed-write");
    let out = dir.join("digits.ember");
    std::fs::write(&out, b"previous").unwrap();
    let o = convert_limited(&out, true);
    let t = text(&o);
    assert!(
        !o.status.success(),
        "the write must fail under the limit: {t}"
    );
    assert!(
        t.contains("cannot write") && t.contains("digits.ember"),
        "{t}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
    assert_eq!(
        names_in(&dir),
        ["digits.ember"],
        "the temporary file is removed"
    );

    // Without the limit the same command writes a whole blob in its place.
    let o = common::convert(&model("digits/model.onnx"), &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let blob = std::fs::read(&out).unwrap();
    assert!(
        blob.len() > 4096 && blob.starts_with(b"EMBR"),
        "{} bytes",
        blob.len()
    );
    assert_eq!(names_in(&dir), ["digits.ember"]);
}

#[test]
fn a_process_killed_while_writing_leaves_the_previous_output() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch_dir("atomic-killed");
    let out = dir.join("digits.ember");
    std::fs::write(&out, b"previous").unwrap();
    let o = convert_limited(&out, false);
    assert_eq!(
        o.status.signal(),
        Some(25),
        "SIGXFSZ kills ember midway through its write: {:?} {}",
        o.status,
        text(&o)
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
    // What the killed process had written is in a temporary file beside it, never at the output path.
    for name in names_in(&dir) {
        assert!(
            name == "digits.ember" || (name.starts_with(".ember-") && name.ends_with(".tmp")),
            "{name}"
        );
    }
}

/// The output is an ordinary file: its permissions are those `std::fs::write` gives a new file in the
/// same folder (0666 less the umask), not a temporary file's private 0600.
#[cfg(unix)]
#[test]
fn the_output_has_an_ordinary_files_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("atomic-permissions");
    let out = dir.join("digits.ember");
    let o = Command::new(env!("CARGO_BIN_EXE_ember"))
        .arg("convert")
        .arg(model("digits/model.onnx"))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("ember starts");
    assert!(o.status.success(), "{}", text(&o));
    let plain = dir.join("plain");
    std::fs::write(&plain, b"x").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode(&out),
        mode(&plain),
        "{:o} against {:o}",
        mode(&out),
        mode(&plain)
    );
}
