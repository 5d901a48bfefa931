//! End to end on the other real models of `tests/models/`: `dscnn` (a MobileNet-style
//! depthwise-separable CNN with BatchNormalization and ReLU6 on the 8x8 digits) and `kws` (a
//! keyword-spotting-style 1-D CNN on synthetic 10x49 feature sequences). Each is converted, run
//! through an ember-core `Session` on batch 1 and on its whole golden set (with a `--shape`
//! override), and compared with the onnxruntime goldens: within 1e-4, and the same top-1 class on
//! every sample. (`tests/models/digits` has its own file, `digits.rs`.)

use std::path::PathBuf;

use ember_convert::{convert, ConvertOptions, Converted};
use ember_testkit::model::{max_abs_diff, models_dir, read_npy, run};

/// Largest difference from onnxruntime's probabilities: their scale is 1, so this is the relative
/// rule of `tests/models/check_goldens.py` (`rtol * max(1, max |golden|)`) with rtol 1e-4.
const TOLERANCE: f32 = 1e-4;

struct Model {
    dir: &'static str,
    /// Input dims after the batch dim.
    sample: &'static [usize],
    classes: usize,
}

const DSCNN: Model = Model {
    dir: "dscnn",
    sample: &[1, 8, 8],
    classes: 10,
};

const KWS: Model = Model {
    dir: "kws",
    sample: &[10, 49],
    classes: 4,
};

impl Model {
    fn path(&self, file: &str) -> PathBuf {
        models_dir().join(self.dir).join(file)
    }

    fn npy(&self, file: &str) -> (Vec<usize>, Vec<f32>) {
        read_npy(&self.path(file))
    }

    fn convert(&self, batch: Option<usize>) -> Converted {
        let bytes =
            std::fs::read(self.path("model.onnx")).expect("model.onnx is in the repository");
        let mut opts = ConvertOptions::default();
        if let Some(n) = batch {
            let mut shape = vec![n];
            shape.extend_from_slice(self.sample);
            opts.shapes = vec![("input".into(), shape)];
        }
        convert(&bytes, &opts).unwrap_or_else(|e| panic!("{}: {e}", self.dir))
    }

    /// Converts for `x{suffix}.npy`'s batch, runs it, and checks against `y{suffix}.npy`.
    fn check(&self, suffix: &str) -> Converted {
        let (xs, x) = self.npy(&format!("x{suffix}.npy"));
        let (ys, y) = self.npy(&format!("y{suffix}.npy"));
        assert_eq!(&xs[1..], self.sample, "{}", self.dir);
        assert_eq!(ys, vec![xs[0], self.classes], "{}", self.dir);
        let converted = self.convert(Some(xs[0]));
        let r = &converted.report;
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert_eq!(r.outputs, vec![("probs".to_string(), ys.clone())]);
        assert!(r.arena.activation_bytes >= r.arena.lower_bound_bytes);
        let got = run(&converted.blob, &x);
        let diff = max_abs_diff(&got, &y);
        println!(
            "{} batch {}: max |ember - onnxruntime| = {diff:.3e}, arena {} bytes (lower bound {}), \
             blob {} bytes, {} ops",
            self.dir,
            xs[0],
            r.arena.activation_bytes,
            r.arena.lower_bound_bytes,
            r.blob_bytes,
            r.ops.len()
        );
        assert!(diff <= TOLERANCE, "{}: max abs diff {diff}", self.dir);
        let top1 = |v: &[f32]| -> Vec<usize> {
            v.chunks(self.classes)
                .map(|row| {
                    (0..row.len())
                        .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                        .unwrap()
                })
                .collect()
        };
        assert_eq!(top1(&got), top1(&y), "{}: top-1 classes differ", self.dir);
        converted
    }
}

/// The labels stored next to the goldens, and how many of them the goldens' top-1 gets right.
fn golden_accuracy(m: &Model) -> f32 {
    let bytes = std::fs::read(m.path("labels.npy")).unwrap();
    let labels = npyz::NpyFile::new(&bytes[..])
        .unwrap()
        .into_vec::<i64>()
        .unwrap();
    let (_, y) = m.npy("y.npy");
    let right = y
        .chunks(m.classes)
        .zip(&labels)
        .filter(|(row, &l)| {
            let best = (0..row.len())
                .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                .unwrap();
            best as i64 == l
        })
        .count();
    right as f32 / labels.len() as f32
}

#[test]
fn dscnn_batch_one_matches_onnxruntime() {
    let c = DSCNN.check("1");
    // Every BatchNormalization is folded into its convolution and every ReLU6 (Clip 0..6) fused:
    // five convolutions, no separate BN or activation ops.
    let names: Vec<&str> = c.report.ops.iter().map(|(n, _)| n.as_str()).collect();
    for layer in ["stem", "dw1", "pw1", "dw2", "pw2"] {
        let want = format!("{layer}+{layer}.bn+{layer}.relu6");
        assert!(names.contains(&want.as_str()), "{want} not in {names:?}");
    }
    let kinds: Vec<&str> = c.report.ops.iter().map(|(_, k)| *k).collect();
    assert!(
        !kinds
            .iter()
            .any(|k| k.contains("BatchNorm") || k.contains("Clip") || k.contains("Mul")),
        "{kinds:?}"
    );
}

#[test]
fn dscnn_whole_test_set_matches_onnxruntime() {
    DSCNN.check("");
    assert!(golden_accuracy(&DSCNN) >= 0.9);
}

#[test]
fn kws_batch_one_matches_onnxruntime() {
    let c = KWS.check("1");
    // The 1-D convolutions run as 2-D ones with their Relu fused, back to back in NHWC: no Relu op
    // and one Transpose in front of the first (the input) and after the last (before the mean).
    let names: Vec<&str> = c.report.ops.iter().map(|(n, _)| n.as_str()).collect();
    for layer in ["conv1", "conv2", "conv3"] {
        let want = format!("{layer}+{layer}.relu");
        assert!(names.contains(&want.as_str()), "{want} not in {names:?}");
    }
    let kinds: Vec<&str> = c.report.ops.iter().map(|(_, k)| *k).collect();
    assert!(!kinds.iter().any(|k| k.contains("Relu")), "{kinds:?}");
    let transposes = kinds.iter().filter(|k| k.contains("Transpose")).count();
    assert!(transposes <= 2, "{kinds:?}");
}

#[test]
fn kws_whole_golden_set_matches_onnxruntime() {
    KWS.check("");
    assert!(golden_accuracy(&KWS) >= 0.85);
}

#[test]
fn dynamic_batch_defaults_to_one() {
    for m in [&DSCNN, &KWS] {
        let c = m.convert(None);
        let mut shape = vec![1];
        shape.extend_from_slice(m.sample);
        assert_eq!(c.report.inputs, vec![("input".to_string(), shape)]);
        assert!(
            c.report
                .notices
                .iter()
                .any(|n| n.contains("dynamic batch dimension N set to 1")),
            "{:?}",
            c.report.notices
        );
    }
}
