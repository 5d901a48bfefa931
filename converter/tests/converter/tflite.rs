//! The TFLite importer against the real interpreters: the models of `tests/models/tflite/` (made by
//! `make.py` there; goldens from LiteRT's reference kernels for float models and from TFLM for int8
//! ones, listed in `cases.txt`) converted with TFLite's double rounding, run through an ember-core
//! `Session` on their golden inputs (each in its own dtype), and compared: float outputs within
//! `1e-5 * max |golden|`, int8 outputs bit for bit. The error models are refused naming the operator.

use std::path::PathBuf;

use ember_convert::{convert, ConvertError, ConvertOptions, Converted, RequantRounding};
use ember_core::{AlignedBuf, DType, Model, Session};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/models/tflite")
}

/// `(case, kind, golden source)` of every line of `cases.txt`.
fn cases() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(dir().join("cases.txt")).expect("cases.txt is there");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].to_string(), f[2].to_string())
        })
        .collect()
}

/// An `.npy` file's dims, element type and little-endian bytes.
fn read_npy(path: &std::path::Path) -> (Vec<usize>, DType, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).expect("a valid .npy");
    let dims: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let descr = npy.dtype().descr().to_string().replace('\'', "");
    let (dtype, data): (DType, Vec<u8>) = match descr.as_str() {
        "<f4" => (
            DType::F32,
            npy.into_vec::<f32>()
                .unwrap()
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        "|i1" => (
            DType::I8,
            npy.into_vec::<i8>()
                .unwrap()
                .iter()
                .map(|&v| v as u8)
                .collect(),
        ),
        "<i4" => (
            DType::I32,
            npy.into_vec::<i32>()
                .unwrap()
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        other => panic!(
            "{}: element type {other} is not used by the cases",
            path.display()
        ),
    };
    (dims, dtype, data)
}

/// `<case>.<stem>.npy`, or `<case>.<stem>0.npy`, `<case>.<stem>1.npy`, ... when there are several.
fn arrays(case: &str, stem: &str) -> Vec<(Vec<usize>, DType, Vec<u8>)> {
    let one = dir().join(format!("{case}.{stem}.npy"));
    if one.exists() {
        return vec![read_npy(&one)];
    }
    (0..)
        .map(|k| dir().join(format!("{case}.{stem}{k}.npy")))
        .take_while(|p| p.exists())
        .map(|p| read_npy(&p))
        .collect()
}

fn convert_case(case: &str) -> Result<Converted, ConvertError> {
    let bytes = std::fs::read(dir().join(format!("{case}.tflite"))).expect("the model is there");
    let opts = ConvertOptions {
        rounding: RequantRounding::Double,
        ..ConvertOptions::default()
    };
    convert(&bytes, &opts)
}

/// Int8 outputs that run Ember's float kernel between a Dequantize and a Quantize where TFLM computes
/// in fixed point: within one step of TFLM's, not bit for bit. RESIZE_BILINEAR: TFLM interpolates
/// with 10-bit fixed-point weights (`ResizeBilinearInteger`); Ember has no int8 resize kernel yet.
const WITHIN_ONE_STEP: &[(&str, usize)] = &[("int8_resize", 0)];

/// Runs every case with a golden and checks it.
#[test]
fn tflite_cases_match_litert_and_tflm() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (case, kind, source) in cases() {
        if source == "none" {
            continue;
        }
        let converted = convert_case(&case).unwrap_or_else(|e| panic!("{case}: {e}"));
        let blob = AlignedBuf::from_bytes(&converted.blob);
        let model = Model::parse(blob.as_bytes()).expect("the blob parses");
        let mut arena = AlignedBuf::zeroed(model.arena_bytes());
        let mut s = Session::new(&model, arena.as_mut_bytes()).expect("the session opens");
        let inputs = arrays(&case, "x");
        assert_eq!(inputs.len(), model.inputs().len(), "{case}: inputs");
        for (k, (dims, dtype, data)) in inputs.iter().enumerate() {
            let mut input = s.input(k).unwrap();
            assert_eq!(
                input.dtype(),
                *dtype,
                "{case}: input {k} keeps the file's type"
            );
            let got: Vec<usize> = input.dims().iter().map(|&d| d as usize).collect();
            assert_eq!(&got, dims, "{case}: input {k} shape");
            input.bytes_mut().copy_from_slice(data);
        }
        s.run().unwrap_or_else(|e| panic!("{case}: {e}"));
        let goldens = arrays(&case, "y");
        assert_eq!(goldens.len(), model.outputs().len(), "{case}: outputs");
        for (k, (dims, dtype, want)) in goldens.iter().enumerate() {
            let out = s.output(k).unwrap();
            assert_eq!(
                out.dtype(),
                *dtype,
                "{case}: output {k} keeps the file's type"
            );
            let got: Vec<usize> = out.dims().iter().map(|&d| d as usize).collect();
            assert_eq!(&got, dims, "{case}: output {k} shape");
            match dtype {
                DType::F32 => {
                    let (g, w) = (out.as_f32().unwrap(), f32s(want));
                    let diff = g
                        .iter()
                        .zip(&w)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0.0f32, f32::max);
                    let scale = w.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                    println!("{case} ({kind}): output {k}: max |ember - litert| = {diff:.2e} (max |y| {scale:.2e})");
                    assert!(
                        diff <= 1e-5 * scale.max(1e-3),
                        "{case}: output {k}: {diff} > 1e-5 x {scale}"
                    );
                }
                _ => {
                    let (mut differ, mut max_lsb) = (0, 0);
                    for (&a, &b) in out.bytes().iter().zip(want) {
                        let d = (i32::from(a as i8) - i32::from(b as i8)).abs();
                        differ += usize::from(d > 0);
                        max_lsb = max_lsb.max(d);
                    }
                    println!(
                        "{case} ({kind}): output {k}: {differ} of {} values differ from TFLM's \
                         (max {max_lsb} LSB)",
                        want.len()
                    );
                    let allowed = WITHIN_ONE_STEP.contains(&(case.as_str(), k));
                    if allowed {
                        assert!(
                            max_lsb <= 1,
                            "{case}: output {k}: {max_lsb} LSB from TFLM's"
                        );
                        continue;
                    }
                    if differ > 0 {
                        failures.push(format!(
                            "{case}: output {k}: {differ} values differ from TFLM's"
                        ));
                    }
                }
            }
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "not bit for bit with TFLM: {failures:#?}"
    );
    assert!(checked >= 40, "only {checked} cases ran");
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The int8 models run in int8 from end to end: no float op, no Quantize or Dequantize inside.
#[test]
fn int8_models_run_integer_ops_only() {
    for case in [
        "int8_conv_pool",
        "int8_fc_softmax",
        "int8_add_mul",
        "int8_concat_reshape",
    ] {
        let c = convert_case(case).unwrap();
        let ops: Vec<&str> = c.report.ops.iter().map(|(_, op)| *op).collect();
        assert!(
            ops.iter()
                .all(|op| op.starts_with("Quant") || *op == "Reshape" || *op == "Concat"),
            "{case}: {ops:?}"
        );
        assert!(
            !ops.contains(&"Quantize") && !ops.contains(&"Dequantize"),
            "{case}: {ops:?}"
        );
    }
}

/// No transposes: TFLite's NHWC is Ember's layout.
#[test]
fn nhwc_models_convert_without_transposes() {
    for (case, _, source) in cases() {
        // The models with a TRANSPOSE operator of their own keep it.
        if source == "none" || case.ends_with("transpose") {
            continue;
        }
        let c = convert_case(&case).unwrap();
        assert!(
            c.report.ops.iter().all(|(_, op)| *op != "Transpose"),
            "{case}: {:?}",
            c.report.ops
        );
    }
}

#[test]
fn an_unsupported_builtin_is_named_with_its_version_and_index() {
    let e = convert_case("unsupported_builtin").unwrap_err().to_string();
    assert!(e.starts_with("operator 1 (BUCKETIZE, version 1)"), "{e}");
    assert!(e.contains("not supported"), "{e}");
}

#[test]
fn an_unsupported_custom_op_is_named() {
    let e = convert_case("unsupported_custom").unwrap_err().to_string();
    assert!(e.contains("CUSTOM \"MyCustomOp\""), "{e}");
    assert!(e.contains("not supported"), "{e}");
}

/// A file cut short, or with a corrupted byte anywhere in its first kilobyte, is an error or a
/// model, never a panic (the fuzz target `tflite` does this at scale).
#[test]
fn damaged_files_are_refused_cleanly() {
    let bytes = std::fs::read(dir().join("int8_conv_pool.tflite")).unwrap();
    for n in [0, 4, 8, 16, 64, bytes.len() / 2, bytes.len() - 1] {
        let e = convert(&bytes[..n], &ConvertOptions::default());
        assert!(e.is_err(), "{n} bytes");
    }
    for i in 0..bytes.len().min(1024) {
        let mut b = bytes.clone();
        b[i] ^= 0xa5;
        let _ = convert(&b, &ConvertOptions::default());
    }
}

/// An operator version newer than the importer reads (here CONV_2D 99, written into the test model
/// with the generated schema's object API) is refused naming op, version and index.
#[test]
fn a_newer_operator_version_is_refused() {
    use ember_convert::tflite::schema::{Model, ModelRef};
    use planus::ReadAsRoot;
    let bytes = std::fs::read(dir().join("conv2d_same.tflite")).unwrap();
    let mut model = Model::try_from(ModelRef::read_as_root(&bytes).unwrap()).unwrap();
    for code in model.operator_codes.iter_mut().flatten() {
        code.version = 99;
    }
    // planus 1.3's `finish` with a file identifier writes it before the root offset; TFLite (and
    // FlatBuffers) put the root offset first. Written without one, then the identifier inserted after
    // the root offset (offsets past it are relative, so only the root offset moves by 4).
    let mut builder = planus::Builder::new();
    let plain = builder.finish(&model, None).to_vec();
    let root = u32::from_le_bytes(plain[..4].try_into().unwrap()) + 4;
    let mut bytes = root.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"TFL3");
    bytes.extend_from_slice(&plain[4..]);
    let e = convert(&bytes, &ConvertOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("operator 0 (CONV_2D, version 99): version 99 is newer"),
        "{e}"
    );
}
