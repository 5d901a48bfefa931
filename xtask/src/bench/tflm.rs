//! The "int8 digits: Ember vs TFLM" table of `cargo xtask bench`.
//!
//! Ember quantizes the digits CNN (`ember convert --quantize int8 --save-qdq`); `tests/tflm/digits.py`
//! builds the same integer network as a full-int8 `.tflite` from the saved QDQ model and runs it with
//! TFLM's Python interpreter (in `target/venv-tflm`, from `tests/tflm/requirements.txt`). The table puts
//! accuracy, arena bytes, model bytes and output agreement side by side. Ember's figures come from its
//! int8 blob; when that step fails, its column says why and TFLM's figures are still printed. A third
//! column converts the `.tflite` itself with Ember (`digits.py --ember`), as a TFLM user would.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::run_quiet;

/// The Markdown section of the report (a heading, the table, notes), or a line saying why there is none.
pub fn section(root: &Path, ember: &Path) -> String {
    let mut s = String::from("\n## int8 digits: Ember vs TFLM\n\n");
    match measure(root, ember) {
        Ok(t) => s.push_str(&t),
        Err(e) => s.push_str(&format!("not available: {}\n", one_line(&format!("{e:#}")))),
    }
    s
}

fn measure(root: &Path, ember: &Path) -> Result<String> {
    let python = venv(root)?;
    let digits = root.join("tests").join("models").join("digits");
    let dir = root.join("target").join("bench").join("tflm");
    std::fs::create_dir_all(&dir)?;
    let (blob, qdq) = (dir.join("digits_int8.ember"), dir.join("digits_qdq.onnx"));
    let batch_blob = dir.join("digits_int8_x360.ember");
    let probs = dir.join("ember_probs.npy");
    for f in [&blob, &qdq, &batch_blob, &probs] {
        let _ = std::fs::remove_file(f);
    }

    eprintln!("bench int8 digits: Ember quantizes, TFLM runs the same network");
    // The QDQ file is written before the int8 blob, so TFLM's column does not depend on Ember converting.
    let convert = Command::new(ember)
        .arg("convert")
        .arg(digits.join("model.onnx"))
        .arg("-o")
        .arg(&blob)
        .args(["--quantize", "int8", "--calibrate"])
        .arg(digits.join("calib.npy"))
        .arg("--save-qdq")
        .arg(&qdq)
        // TFLite's default arithmetic, which the tflite-micro package's kernels use.
        .args(["--rounding", "double"])
        .output()
        .context("cannot start ember convert")?;
    if !qdq.exists() {
        bail!(
            "ember convert --quantize int8 wrote no QDQ model: {}",
            String::from_utf8_lossy(&convert.stderr)
        );
    }
    let ember_figures = if convert.status.success() {
        ember_int8(ember, &blob, &qdq, &batch_blob, &probs, &digits)
    } else {
        Err(anyhow::anyhow!(
            "ember convert --quantize int8 failed: {}",
            String::from_utf8_lossy(&convert.stderr)
        ))
    };

    let mut cmd = Command::new(&python);
    cmd.arg(root.join("tests").join("tflm").join("digits.py"))
        .arg(&qdq)
        .arg("--out")
        .arg(&dir);
    if ember_figures.is_ok() {
        cmd.arg("--ember-output").arg(&probs);
    }
    // Ember converts the `.tflite` digits.py writes, as a TFLM user's file.
    cmd.arg("--ember").arg(ember);
    let t = super::json_of(&mut cmd, "tests/tflm/digits.py")?;
    Ok(table(&t, ember_figures, &digits))
}

/// Ember's arena and blob bytes (batch-1 int8 blob), and its outputs on the 360 test images in `probs`.
fn ember_int8(
    ember: &Path,
    blob: &Path,
    qdq: &Path,
    batch_blob: &Path,
    probs: &Path,
    digits: &Path,
) -> Result<Value> {
    let figures = super::json_of(
        Command::new(ember)
            .arg("bench")
            .arg(blob)
            .arg("--input")
            .arg(digits.join("x1.npy"))
            .arg("--json"),
        "ember bench (int8 digits)",
    )?;
    // The same QDQ model for a batch of 360: the same kernels and integers, one run for every test image.
    run_quiet(
        Command::new(ember)
            .arg("convert")
            .arg(qdq)
            .arg("-o")
            .arg(batch_blob)
            .args(["--shape", "input=360,1,8,8", "--rounding", "double"]),
        "ember convert (QDQ model, batch 360)",
    )?;
    run_quiet(
        Command::new(ember)
            .arg("run")
            .arg(batch_blob)
            .arg("--input")
            .arg(digits.join("x.npy"))
            .arg("--output")
            .arg(probs),
        "ember run (int8 digits, 360 images)",
    )?;
    Ok(figures)
}

fn table(t: &Value, ember: Result<Value>, digits: &Path) -> String {
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.2}%", 100.0 * v));
    let int = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_u64)
            .map_or("-".to_string(), |n| n.to_string())
    };
    let images = int(t, "images");
    let onnx_bytes = std::fs::metadata(digits.join("model.onnx"))
        .map_or("-".to_string(), |m| m.len().to_string());
    // Columns: float, Ember int8 (its own quantization), Ember int8 from the `.tflite`, TFLM int8;
    // the two Ember columns are filled below.
    let row = |label: String, float: String, tflm: String| {
        [label, float, String::new(), String::new(), tflm]
    };
    let mut rows: Vec<[String; 5]> = vec![
        row(
            format!("top-1 accuracy ({images} test images)"),
            pct(t.get("float_accuracy").and_then(Value::as_f64)),
            pct(t.get("tflm_accuracy").and_then(Value::as_f64)),
        ),
        row(
            "arena bytes (total)".into(),
            "-".into(),
            int(t, "tflm_arena_bytes"),
        ),
        row(
            "arena: activations + scratch (Ember plan / TFLM head)".into(),
            "-".into(),
            int(t, "tflm_arena_head_bytes"),
        ),
        row(
            "arena: persistent (Ember / TFLM tail)".into(),
            "-".into(),
            int(t, "tflm_arena_tail_bytes"),
        ),
        row(
            "model bytes (.onnx / .ember / .ember / .tflite)".into(),
            onnx_bytes,
            int(t, "tflite_bytes"),
        ),
        row("top-1 same as TFLM".into(), "-".into(), "-".into()),
        row(
            "max \\|int8 difference\\| from TFLM (LSB)".into(),
            "-".into(),
            "-".into(),
        ),
    ];
    let images_n = t.get("images").and_then(Value::as_u64).unwrap_or(0);
    let from_tflite = t.get("ember_tflite").cloned().unwrap_or(Value::Null);
    fill_ember(
        &mut rows,
        3,
        &from_tflite,
        &from_tflite["vs_tflm"],
        images_n,
        |e| e.get("accuracy").and_then(Value::as_f64),
    );
    let mut notes = String::new();
    match &ember {
        Ok(e) => {
            let agree = t.get("ember_vs_tflm").cloned().unwrap_or(Value::Null);
            let accuracy = t.get("ember_accuracy").and_then(Value::as_f64);
            fill_ember(&mut rows, 2, e, &agree, images_n, |_| accuracy);
            notes.push_str(&format!(
                "Ember's outputs: {}.\n",
                t.get("ember_output_read_as")
                    .and_then(Value::as_str)
                    .unwrap_or("-")
            ));
        }
        Err(e) => {
            rows[0][2] = format!("not available: {}", one_line(&format!("{e:#}")));
            for r in &mut rows[1..] {
                r[2] = "-".into();
            }
        }
    }
    let mut s = String::from(
        "The digits CNN quantized by Ember (`ember convert --quantize int8 --calibrate \
         tests/models/digits/calib.npy --save-qdq --rounding double`: TFLite's default requantization, \
         which TFLM's kernels compute; Ember's default single rounding gives 97.78% on the same model); \
         `tests/tflm/digits.py` copies the QDQ model's integers \
         and scales into a full-int8 `.tflite` (no re-quantization) and runs it with TFLM's reference kernels \
         (tflite-micro Python package). Float: onnxruntime's outputs of the float model \
         (`tests/models/digits/y.npy`). Arena: TFLM's `print_allocations()` total; Ember's `arena_bytes` \
         of the batch-1 int8 blob (`ember bench --json`). Outputs: the int8 softmax (scale 1/256, zero \
         point -128) on every test image. Ember's blob keeps the model's float input and output (a \
         Quantize and a Dequantize op at the edges); the `.tflite` has int8 ones. \
         \"From the same .tflite\": `ember convert digits_int8.tflite` with no option (the TFLM user's \
         file as it is; int8 input and output as the file declares them), each test image run as int8.\n\n",
    );
    s.push_str(
        "| | float (onnxruntime) | Ember int8 | Ember int8, from the same .tflite | TFLM int8 |\n\
         | --- | --- | --- | --- | --- |\n",
    );
    for r in &rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    if !notes.is_empty() {
        s.push('\n');
        s.push_str(&notes);
    }
    s
}

/// Fills column `col` of the table with an Ember blob's figures (`ember bench --json`), its accuracy
/// and its agreement with TFLM; a column without figures shows "-".
fn fill_ember(
    rows: &mut [[String; 5]],
    col: usize,
    e: &Value,
    agree: &Value,
    images: u64,
    accuracy: impl Fn(&Value) -> Option<f64>,
) {
    let int = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_u64)
            .map_or("-".to_string(), |n| n.to_string())
    };
    let sum = |keys: &[&str]| -> String {
        let parts: Option<Vec<u64>> = keys
            .iter()
            .map(|k| e.get(*k).and_then(Value::as_u64))
            .collect();
        parts.map_or("-".to_string(), |p| p.iter().sum::<u64>().to_string())
    };
    rows[0][col] = accuracy(e).map_or("-".to_string(), |v| format!("{:.2}%", 100.0 * v));
    rows[1][col] = int(e, "arena_bytes");
    rows[2][col] = sum(&["activation_bytes", "scratch_bytes"]);
    rows[3][col] = sum(&["persistent_bytes"]);
    rows[4][col] = int(e, "blob_bytes");
    if agree.is_null() {
        rows[5][col] = "-".into();
        rows[6][col] = "-".into();
    } else {
        rows[5][col] = format!("{} / {}", int(agree, "top1_same"), int(agree, "images"));
        rows[6][col] = format!(
            "{} ({} of {} values differ)",
            int(agree, "max_abs_diff_lsb"),
            int(agree, "values_differing"),
            images * 10
        );
    }
}

/// The first line of an error that says something, without table-breaking characters.
pub(super) fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let line = line.replace('|', "\\|");
    if line.chars().count() > 300 {
        format!("{}...", line.chars().take(300).collect::<String>())
    } else {
        line
    }
}

/// Creates (or reuses) `target/venv-tflm` with the pinned packages of `tests/tflm/requirements.txt`.
fn venv(root: &Path) -> Result<PathBuf> {
    let dir = root.join("target").join("venv-tflm");
    let python = dir.join("bin").join("python");
    let reqs = root.join("tests").join("tflm").join("requirements.txt");
    let stamp = dir.join("requirements.stamp");
    let wanted =
        std::fs::read_to_string(&reqs).context("cannot read tests/tflm/requirements.txt")?;
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    run_quiet(
        Command::new("python3").arg("-m").arg("venv").arg(&dir),
        "python3 -m venv target/venv-tflm",
    )?;
    run_quiet(
        crate::pip_install(&python).arg("-r").arg(&reqs),
        "pip install -r tests/tflm/requirements.txt",
    )?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tflm_figures() -> Value {
        serde_json::json!({
            "images": 360, "float_accuracy": 0.98, "tflm_accuracy": 0.975, "tflm_arena_bytes": 3552,
            "tflm_arena_head_bytes": 640, "tflm_arena_tail_bytes": 2912, "tflite_bytes": 7984,
            "ember_accuracy": 0.975, "ember_output_read_as": "int8",
            "ember_vs_tflm": {"top1_same": 359, "images": 360, "max_abs_diff_lsb": 1, "values_differing": 3},
            "ember_tflite": {
                "accuracy": 0.975, "arena_bytes": 700, "activation_bytes": 600, "scratch_bytes": 100,
                "persistent_bytes": 0, "blob_bytes": 5792,
                "vs_tflm": {"top1_same": 360, "images": 360, "max_abs_diff_lsb": 0, "values_differing": 0}
            }
        })
    }

    #[test]
    fn ember_column_says_why_it_is_missing() {
        let t = table(
            &tflm_figures(),
            Err(anyhow::anyhow!(
                "ember convert failed:\nno importer | for X"
            )),
            Path::new("/nonexistent"),
        );
        assert!(t.contains("| not available: ember convert failed: no importer \\| for X |"));
        assert!(
            t.contains("| arena bytes (total) | - | - | 700 | 3552 |"),
            "{t}"
        );
    }

    #[test]
    fn ember_column_holds_its_figures() {
        let e = serde_json::json!({
            "arena_bytes": 640, "activation_bytes": 640, "scratch_bytes": 0, "persistent_bytes": 0,
            "blob_bytes": 6128
        });
        let t = table(&tflm_figures(), Ok(e), Path::new("/nonexistent"));
        assert!(
            t.contains("| arena bytes (total) | - | 640 | 700 | 3552 |"),
            "{t}"
        );
        assert!(
            t.contains("| top-1 same as TFLM | - | 359 / 360 | 360 / 360 | - |"),
            "{t}"
        );
        assert!(
            t.contains("| 1 (3 of 3600 values differ) | 0 (0 of 3600 values differ) |"),
            "{t}"
        );
        assert!(
            t.contains("| top-1 accuracy (360 test images) | 98.00% | 97.50% | 97.50% |"),
            "{t}"
        );
    }
}
