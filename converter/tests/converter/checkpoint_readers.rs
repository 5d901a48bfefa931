//! The checkpoint readers on files written by `tests/models/checkpoints/make.py`: every layout of the
//! digits CNN's weights gives the trained values, the reader edge cases (strides, offsets, shared
//! storages, byte orders, type sizes, dtypes, protocol 4, deflate, `_load_from_bytes`) give the values
//! `make.py` put in, and the hostile pickles are refused with the global or budget named, running
//! nothing.

use std::path::{Path, PathBuf};

use ember_convert::onnx::proto::ModelProto;
use ember_convert::weights::{Checkpoint, ElementType, Format};
use prost::Message;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models/checkpoints")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The digits model's trained weights by PyTorch name (`conv1.weight`, ...), from its ONNX file.
fn trained() -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let bytes = std::fs::read(dir().join("../digits/model.onnx")).unwrap();
    let model = ModelProto::decode(&bytes[..]).unwrap();
    model
        .graph
        .unwrap()
        .initializer
        .iter()
        .map(|t| {
            let (shape, data) = ember_convert::onnx::tensor::read_tensor(t, &t.name).unwrap();
            let ember_convert::ir::ConstData::F32(v) = data else {
                panic!("float weights")
            };
            let name = t.name.replace(".w", ".weight").replace(".b", ".bias");
            (name, shape, v)
        })
        .collect()
}

fn bf16_round(v: f32) -> f32 {
    ember_core::half::bf16::from_f32(v).to_f32()
}

/// A file, its format, the prefix of its names, and the rounding of its values.
type Layout = (&'static str, Format, &'static str, fn(f32) -> f32);

#[test]
fn every_layout_of_the_digits_weights_reads_the_trained_values() {
    let cases: [Layout; 4] = [
        ("digits_zip.pt", Format::TorchZip, "", |v| v),
        ("digits_legacy.pt", Format::TorchLegacy, "module.", |v| v),
        (
            "digits_bf16.safetensors",
            Format::Safetensors,
            "model.",
            bf16_round,
        ),
        ("digits.npz", Format::Npz, "backbone.", |v| v),
    ];
    let want = trained();
    assert_eq!(want.len(), 8);
    for (file, format, prefix, round) in cases {
        let bytes = read(file);
        let ckpt = Checkpoint::parse(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(ckpt.format(), Some(format), "{file}");
        for (name, shape, values) in &want {
            let key = format!("{prefix}{name}");
            let t = ckpt.get(&key).unwrap_or_else(|| panic!("{file}: no {key}"));
            if file == "digits.npz" && name == "conv2.bias" {
                assert_eq!(t.shape(), [16, 1, 1], "npz keeps the saved shape");
            } else {
                assert_eq!(t.shape(), shape.as_slice(), "{file} {key}");
            }
            let got = t.to_f32().unwrap();
            let exp: Vec<f32> = values.iter().map(|&v| round(v)).collect();
            assert_eq!(got, exp, "{file} {key}");
        }
    }
}

#[test]
fn zip_layout_borrows_contiguous_tensors_and_gathers_views() {
    let bytes = read("digits_zip.pt");
    let ckpt = Checkpoint::parse(&bytes).unwrap();
    // fc1.weight is a transposed view (gathered); the biases are offsets into one storage (borrowed).
    assert!(!ckpt.get("fc1.weight").unwrap().is_borrowed());
    assert!(ckpt.get("conv1.bias").unwrap().is_borrowed());
    assert!(ckpt.get("conv2.bias").unwrap().is_borrowed());
    let legacy_bytes = read("digits_legacy.pt");
    let legacy = Checkpoint::parse(&legacy_bytes).unwrap();
    let step = legacy.get("module.step").unwrap();
    assert_eq!((step.dtype(), step.shape()), (ElementType::I64, &[][..]));
    assert_eq!(step.to_i64().unwrap(), vec![1000]);
}

/// What every views file holds, under `model.`: (name, dtype, shape, values).
fn views_expected() -> Vec<(&'static str, ElementType, Vec<usize>, Vec<f64>)> {
    use ElementType::*;
    let t: Vec<f64> = (0..4)
        .flat_map(|c| (0..3).map(move |r| f64::from(r * 4 + c)))
        .collect();
    vec![
        ("f32.transposed", F32, vec![4, 3], t),
        ("f32.offset_a", F32, vec![3], vec![1.0, 1.5, 2.0]),
        (
            "f32.offset_b",
            F32,
            vec![2, 3],
            vec![2.0, 2.5, 3.0, 3.5, 4.0, 4.5],
        ),
        ("f32.expanded", F32, vec![2, 3], vec![7.0; 6]),
        ("f32.scalar", F32, vec![], vec![42.0]),
        ("f16.half", F16, vec![4], vec![1.5, -2.25, 65504.0, 0.0]),
        ("bf16.b", BF16, vec![3], vec![1.0, -3.5, 0.15625]),
        ("f64.d", F64, vec![2], vec![0.1, -1e300]),
        ("i64.steps", I64, vec![3], vec![-1.0, 0.0, 1e6]),
        ("i8.q", I8, vec![3], vec![-128.0, 0.0, 127.0]),
        ("bool.mask", Bool, vec![3], vec![1.0, 0.0, 1.0]),
        ("u16.v3", U16, vec![3], vec![1.0, 65535.0, 256.0]),
        ("param.p", F32, vec![2], vec![3.0, 4.0]),
    ]
}

fn values(ckpt: &Checkpoint<'_>, name: &str) -> Vec<f64> {
    let t = ckpt.get(name).unwrap_or_else(|| panic!("no {name}"));
    if t.dtype().is_float() {
        t.to_f64().unwrap()
    } else {
        t.to_i64().unwrap().into_iter().map(|v| v as f64).collect()
    }
}

#[test]
fn views_files_give_the_values_make_py_wrote() {
    let files = [
        ("views_le.pt", Format::TorchZip, false),
        ("views_be.pt", Format::TorchZip, false),
        ("views_p4.pt", Format::TorchZip, false),
        ("views_legacy.pt", Format::TorchLegacy, true),
        ("views_legacy_be.pt", Format::TorchLegacy, true),
        ("views_legacy_long4.pt", Format::TorchLegacy, true),
    ];
    for (file, format, legacy) in files {
        let bytes = read(file);
        let ckpt = Checkpoint::parse(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(ckpt.format(), Some(format), "{file}");
        let mut expected = views_expected();
        if legacy {
            // A pre-0.4 storage view: elements 5..9 of the shared storage, from its second element.
            expected.push((
                "f32.storage_view",
                ElementType::F32,
                vec![2],
                vec![3.0, 3.5],
            ));
        }
        assert_eq!(
            ckpt.len(),
            expected.len(),
            "{file}: {:?}",
            ckpt.names().collect::<Vec<_>>()
        );
        for (name, dtype, shape, want) in expected {
            let key = format!("model.{name}");
            let t = ckpt.get(&key).unwrap_or_else(|| panic!("{file}: no {key}"));
            assert_eq!(
                (t.dtype(), t.shape()),
                (dtype, shape.as_slice()),
                "{file} {key}"
            );
            let got = values(&ckpt, &key);
            let exp: Vec<f64> = match dtype {
                // The f32 and f16 values are exact in their type; 0.1 is exact only in f64.
                ElementType::F32 => want.iter().map(|&v| f64::from(v as f32)).collect(),
                _ => want,
            };
            assert_eq!(got, exp, "{file} {key}");
        }
        let notices = ckpt.notices().join("; ");
        assert!(notices.contains("skipped"), "{file}: {notices}");
        if file.contains("_be") {
            assert!(notices.contains("byte-swapped"), "{file}: {notices}");
        }
        if file.contains("long4") {
            assert!(notices.contains("4-byte"), "{file}: {notices}");
        }
    }
}

#[test]
fn a_state_dict_pickled_without_torch_save_reads_its_inline_storages() {
    let bytes = read("views.pkl");
    let ckpt = Checkpoint::parse(&bytes).unwrap();
    assert_eq!(ckpt.format(), Some(Format::TorchPickle));
    assert_eq!(values(&ckpt, "w"), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // The same storage, transposed.
    assert_eq!(values(&ckpt, "wt"), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(ckpt.get("wt").unwrap().shape(), [3, 2]);
}

/// The marker a hostile pickle would create if it ran (make.py's MARKER), relative to the working
/// directory.
const MARKER: &str = "ember-pickle-was-executed";

fn hostile_cases() -> Vec<(String, String)> {
    let expected: serde_json::Value =
        serde_json::from_slice(&read("hostile/expected.json")).unwrap();
    let mut out = Vec::new();
    for (name, must_name) in expected.as_object().unwrap() {
        let must = must_name.as_str().unwrap().to_string();
        if name == "load_from_bytes" {
            out.push(("hostile/load_from_bytes.pkl".to_string(), must));
        } else {
            out.push((format!("hostile/{name}_zip.pt"), must.clone()));
            out.push((format!("hostile/{name}_legacy.pt"), must));
        }
    }
    out
}

#[test]
fn hostile_pickles_are_refused_naming_the_global_or_budget_and_run_nothing() {
    let cases = hostile_cases();
    assert_eq!(cases.len(), 15);
    for (file, must_name) in cases {
        let bytes = read(&file);
        assert!(bytes.len() <= 1100, "{file} is {} bytes", bytes.len());
        let err = Checkpoint::parse(&bytes).expect_err(&file).to_string();
        let named = if must_name.starts_with("max_") {
            format!("Limits::{must_name}")
        } else {
            format!("`{must_name}`")
        };
        assert!(err.contains(&named), "{file}: {err}");
        if !must_name.starts_with("max_") {
            assert!(err.contains("nothing in the file was run"), "{file}: {err}");
        }
    }
    assert!(!Path::new(MARKER).exists());
    assert!(!dir().join(MARKER).exists());
}

#[test]
fn truncated_files_are_errors_not_panics() {
    for file in [
        "digits_zip.pt",
        "digits_legacy.pt",
        "digits_bf16.safetensors",
        "digits.npz",
        "views.pkl",
        "views_legacy_long4.pt",
    ] {
        let bytes = read(file);
        for cut in [1, 9, 40, bytes.len() / 3, bytes.len() / 2, bytes.len() - 1] {
            let r = Checkpoint::parse(&bytes[..cut]);
            assert!(r.is_err(), "{file} cut at {cut} parsed");
        }
        // Flipped bytes: any result but a panic.
        for at in (0..bytes.len()).step_by(97) {
            let mut b = bytes.clone();
            b[at] ^= 0x5a;
            let _ = Checkpoint::parse(&b);
        }
    }
}

#[test]
fn legacy_type_sizes_other_than_short_2_and_int_4_are_refused() {
    let mut bytes = read("digits_legacy.pt");
    // sys_info's {'short': 2, ...}: BINUNICODE 'short', BINPUT n, BININT1 2.
    let at = bytes
        .windows(5)
        .position(|w| w == b"short")
        .expect("sys_info names short");
    assert_eq!(bytes[at + 7..at + 9], *b"K\x02");
    bytes[at + 8] = 4;
    let e = Checkpoint::parse(&bytes).unwrap_err().to_string();
    assert!(e.contains("short = 4 bytes"), "{e}");
}

mod mutations {
    use super::*;
    use proptest::prelude::*;

    const FILES: [&str; 7] = [
        "views_le.pt",
        "views_p4.pt",
        "views_legacy.pt",
        "views_legacy_long4.pt",
        "views.pkl",
        "digits_bf16.safetensors",
        "lora/adapter_model.safetensors",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any byte of any file may be anything: the readers return, they never panic.
        #[test]
        fn mutated_files_never_panic(
            file in 0..FILES.len(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        ) {
            let mut bytes = read(FILES[file]);
            for (at, b) in edits {
                let i = at.index(bytes.len());
                bytes[i] = b;
            }
            let _ = Checkpoint::parse(&bytes);
        }

        /// The small integers of the legacy object pickle (sizes, strides, offsets, element counts:
        /// the operands of its BININT1 opcodes) may be anything: the readers never panic.
        #[test]
        fn mutated_small_integers_never_panic(
            picks in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        ) {
            let mut bytes = read("views_legacy.pt");
            let operands: Vec<usize> = (0..bytes.len() - 1)
                .filter(|&i| bytes[i] == b'K')
                .map(|i| i + 1)
                .collect();
            for (at, v) in picks {
                bytes[operands[at.index(operands.len())]] = v;
            }
            let _ = Checkpoint::parse(&bytes);
        }
    }
}
