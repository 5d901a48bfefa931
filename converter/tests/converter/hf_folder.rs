//! Hugging Face model folders (`build::hf`), on a tiny random BERT written here: a folder and a zip
//! of it convert to the same blob; the mask hides padded tokens; the sentence-transformers pooling
//! modes and normalization; checkpoint name variants; and the errors for an unknown family, a
//! missing or mis-shaped weight, an unknown module and a bad `--shape`. The numbers of a real model
//! are checked against numpy on all-MiniLM-L6-v2 (`host-tools/tests/minilm.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

use ember_convert::build::hf::{self, ModelFiles};
use ember_convert::{ConvertOptions, WeightStorage};
use ember_testkit::model::max_abs_diff;

const VOCAB: usize = 20;
const HIDDEN: usize = 8;
const LAYERS: usize = 2;
const FFN: usize = 16;
const MAX_POS: usize = 16;
const SEQ: usize = 6;

/// A fresh scratch folder under the target directory.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hf_folder_{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The tiny BERT's tensors (names as `BertModel.state_dict()` has them), seeded.
fn weights(prefix: &str) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.6
    };
    let mut out = Vec::new();
    let mut add = |name: String, shape: Vec<usize>, bias: Option<f32>| {
        let n = shape.iter().product();
        let v = match bias {
            Some(c) => (0..n).map(|_| c + 0.1 * next()).collect(),
            None => (0..n).map(|_| next()).collect(),
        };
        out.push((format!("{prefix}{name}"), shape, v));
    };
    add(
        "embeddings.word_embeddings.weight".into(),
        vec![VOCAB, HIDDEN],
        None,
    );
    add(
        "embeddings.position_embeddings.weight".into(),
        vec![MAX_POS, HIDDEN],
        None,
    );
    add(
        "embeddings.token_type_embeddings.weight".into(),
        vec![2, HIDDEN],
        None,
    );
    add(
        "embeddings.LayerNorm.weight".into(),
        vec![HIDDEN],
        Some(1.0),
    );
    add("embeddings.LayerNorm.bias".into(), vec![HIDDEN], Some(0.0));
    for l in 0..LAYERS {
        let p = format!("encoder.layer.{l}.");
        for (m, o, i) in [
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", FFN, HIDDEN),
            ("output.dense", HIDDEN, FFN),
        ] {
            add(format!("{p}{m}.weight"), vec![o, i], None);
            add(format!("{p}{m}.bias"), vec![o], Some(0.0));
        }
        for m in ["attention.output.LayerNorm", "output.LayerNorm"] {
            add(format!("{p}{m}.weight"), vec![HIDDEN], Some(1.0));
            add(format!("{p}{m}.bias"), vec![HIDDEN], Some(0.0));
        }
    }
    out
}

fn safetensors(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let start = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut h = serde_json::to_vec(&header).unwrap();
    h.resize(h.len().next_multiple_of(8), b' ');
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    out
}

fn config(model_type: &str) -> serde_json::Value {
    serde_json::json!({
        "model_type": model_type, "vocab_size": VOCAB, "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS, "num_attention_heads": 2, "intermediate_size": FFN,
        "hidden_act": "gelu", "max_position_embeddings": MAX_POS, "type_vocab_size": 2,
        "layer_norm_eps": 1e-12, "position_embedding_type": "absolute"
    })
}

/// A sentence-transformers folder: the encoder, a pooling module with these modes on, and Normalize.
fn folder(name: &str, pooling: &[&str], normalize: bool) -> PathBuf {
    folder_of(name, &weights(""), pooling, normalize)
}

/// [`folder`] with these weights.
fn folder_of(
    name: &str,
    w: &[(String, Vec<usize>, Vec<f32>)],
    pooling: &[&str],
    normalize: bool,
) -> PathBuf {
    let d = scratch(name);
    write_folder(&d, &config("bert"), &safetensors(w), pooling, normalize);
    d
}

fn write_folder(
    d: &Path,
    config: &serde_json::Value,
    weights: &[u8],
    pooling: &[&str],
    normalize: bool,
) {
    std::fs::write(d.join("config.json"), config.to_string()).unwrap();
    std::fs::write(d.join("model.safetensors"), weights).unwrap();
    let mut modules = vec![serde_json::json!({"idx": 0, "name": "0", "path": "",
        "type": "sentence_transformers.models.Transformer"})];
    if !pooling.is_empty() {
        std::fs::create_dir_all(d.join("1_Pooling")).unwrap();
        let mut cfg = serde_json::json!({"word_embedding_dimension": HIDDEN});
        for m in pooling {
            cfg[format!("pooling_mode_{m}")] = true.into();
        }
        std::fs::write(d.join("1_Pooling/config.json"), cfg.to_string()).unwrap();
        modules.push(
            serde_json::json!({"idx": 1, "name": "1", "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling"}),
        );
    }
    if normalize {
        modules.push(
            serde_json::json!({"idx": 2, "name": "2", "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize"}),
        );
    }
    std::fs::write(
        d.join("modules.json"),
        serde_json::Value::from(modules).to_string(),
    )
    .unwrap();
}

fn opts(batch: usize) -> ConvertOptions {
    ConvertOptions {
        shapes: vec![("input_ids".into(), vec![batch, SEQ])],
        ..ConvertOptions::default()
    }
}

fn convert(path: &Path, storage: WeightStorage) -> Result<hf::FolderConverted, String> {
    let files = ModelFiles::open(path).map_err(|e| e.to_string())?;
    hf::convert(&files, &opts(1), &hf::Options::default(), storage).map_err(|e| e.to_string())
}

/// Runs a converted encoder on int64 `ids` and `mask` (one sequence each).
fn run(blob: &[u8], ids: &[i64], mask: &[i64]) -> Vec<f32> {
    let blob = ember_core::AlignedBuf::from_bytes(blob);
    let model = ember_core::Model::parse(blob.as_bytes()).unwrap();
    let mut arena = ember_core::AlignedBuf::zeroed(model.arena_bytes());
    let mut s = ember_core::Session::new(&model, arena.as_mut_bytes()).unwrap();
    let bytes = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    s.input(0).unwrap().bytes_mut().copy_from_slice(&bytes(ids));
    s.input(1)
        .unwrap()
        .bytes_mut()
        .copy_from_slice(&bytes(mask));
    s.run().unwrap();
    s.output(0).unwrap().as_f32().unwrap().to_vec()
}

const IDS: [i64; SEQ] = [1, 7, 3, 12, 0, 0];
const MASK: [i64; SEQ] = [1, 1, 1, 1, 0, 0];

#[test]
fn a_folder_and_its_zip_give_one_blob_and_padding_is_masked() {
    let dir = folder("mean", &["mean_tokens"], true);
    let done = convert(&dir, WeightStorage::Float).unwrap();
    let r = &done.converted.report;
    assert_eq!(
        r.inputs,
        [
            ("input_ids".to_string(), vec![1, SEQ]),
            ("attention_mask".to_string(), vec![1, SEQ])
        ]
    );
    assert_eq!(
        r.outputs,
        [("sentence_embedding".to_string(), vec![1, HIDDEN])]
    );
    assert_eq!(done.bind.bound.len(), weights("").len());
    assert!(r.ops.iter().any(|(_, k)| *k == "Embedding"), "{:?}", r.ops);

    // The same files zipped (under a folder, as a download would be).
    let zip_path = scratch("zip").join("model.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for rel in [
        "config.json",
        "model.safetensors",
        "modules.json",
        "1_Pooling/config.json",
    ] {
        z.start_file(format!("tiny-bert/{rel}"), stored).unwrap();
        z.write_all(&std::fs::read(dir.join(rel)).unwrap()).unwrap();
    }
    z.finish().unwrap();
    assert!(ModelFiles::is_model(&zip_path) && ModelFiles::is_model(&dir));
    let zipped = convert(&zip_path, WeightStorage::Float).unwrap();
    assert_eq!(zipped.converted.blob, done.converted.blob);

    let blob = &done.converted.blob;
    let y = run(blob, &IDS, &MASK);
    let norm: f32 = y.iter().map(|v| v * v).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    // Tokens under a zero mask do not count, whatever they are...
    let other_padding = run(blob, &[1, 7, 3, 12, 19, 5], &MASK);
    let d = max_abs_diff(&y, &other_padding);
    assert!(d < 1e-6, "padding leaked: {d}");
    // ... and the visible ones do.
    let changed = run(blob, &[1, 7, 4, 12, 0, 0], &MASK);
    let d = max_abs_diff(&y, &changed);
    assert!(d > 1e-3, "{d}");
    // A token id outside the vocabulary is refused at run time.
    let model_blob = ember_core::AlignedBuf::from_bytes(blob);
    let model = ember_core::Model::parse(model_blob.as_bytes()).unwrap();
    let mut arena = ember_core::AlignedBuf::zeroed(model.arena_bytes());
    let mut s = ember_core::Session::new(&model, arena.as_mut_bytes()).unwrap();
    let far: Vec<u8> = [1i64, 20, 0, 0, 0, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    s.input(0).unwrap().bytes_mut().copy_from_slice(&far);
    assert_eq!(
        s.run().unwrap_err(),
        ember_core::ops::array::embedding::OUT_OF_RANGE
    );
}

#[test]
fn pooling_modes_concatenate_and_the_plain_encoder_gives_hidden_states() {
    for (modes, width) in [
        (&["cls_token"][..], HIDDEN),
        (&["max_tokens"][..], HIDDEN),
        (&["mean_sqrt_len_tokens"][..], HIDDEN),
        (&["cls_token", "mean_tokens"][..], 2 * HIDDEN),
    ] {
        let dir = folder(&modes.join("_"), modes, false);
        let done = convert(&dir, WeightStorage::Float).unwrap();
        let r = &done.converted.report;
        assert_eq!(r.outputs[0].1, [1, width], "{modes:?}");
        let y = run(&done.converted.blob, &IDS, &MASK);
        assert!(y.iter().all(|v| v.is_finite()), "{modes:?}");
    }
    // Max pooling ignores masked tokens too.
    let dir = folder("max_masked", &["max_tokens"], false);
    let blob = convert(&dir, WeightStorage::Float).unwrap().converted.blob;
    assert_eq!(
        run(&blob, &IDS, &MASK),
        run(&blob, &[1, 7, 3, 12, 9, 9], &MASK)
    );
    // No pooling module: the last hidden state.
    let dir = folder("plain", &[], false);
    let done = convert(&dir, WeightStorage::Float).unwrap();
    let r = &done.converted.report;
    assert_eq!(
        r.outputs,
        [("last_hidden_state".to_string(), vec![1, SEQ, HIDDEN])]
    );
    assert!(
        r.notices.iter().any(|n| n.contains("no Pooling module")),
        "{:?}",
        r.notices
    );
}

#[test]
fn prefixed_and_gamma_beta_checkpoints_read_the_same() {
    let dir = folder("names_plain", &["mean_tokens"], true);
    let plain = convert(&dir, WeightStorage::Float).unwrap().converted.blob;
    let renamed: Vec<_> = weights("bert.")
        .into_iter()
        .map(|(n, s, v)| {
            let n = n.replace("LayerNorm.weight", "LayerNorm.gamma");
            (n.replace("LayerNorm.bias", "LayerNorm.beta"), s, v)
        })
        .collect();
    let d = folder_of("names_bert", &renamed, &["mean_tokens"], true);
    let done = convert(&d, WeightStorage::Float).unwrap();
    assert_eq!(
        run(&done.converted.blob, &IDS, &MASK),
        run(&plain, &IDS, &MASK)
    );
}

#[test]
fn int8_weights_quantize_every_linear_layer_and_the_token_table() {
    let dir = folder("int8", &["mean_tokens"], true);
    let f32_blob = convert(&dir, WeightStorage::Float).unwrap().converted;
    let int8 = convert(&dir, WeightStorage::Int8).unwrap().converted;
    let s = int8.report.weight_only.as_ref().unwrap();
    assert_eq!((s.layers, s.embeddings), (6 * LAYERS, 1));
    let w8 = int8
        .report
        .ops
        .iter()
        .filter(|(_, k)| *k == "FullyConnectedW8")
        .count();
    assert_eq!(w8, 6 * LAYERS);
    assert!(int8.blob.len() < f32_blob.blob.len());
    let (a, b) = (
        run(&f32_blob.blob, &IDS, &MASK),
        run(&int8.blob, &IDS, &MASK),
    );
    let cos: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    println!("tiny BERT int8-weights: cosine to f32 {cos:.6}");
    assert!(cos > 0.99, "{cos}");
}

#[test]
fn errors_name_the_family_the_layer_the_tensor_and_the_input() {
    // An architecture Ember does not build.
    let d = scratch("gpt2");
    write_folder(&d, &config("gpt2"), &safetensors(&weights("")), &[], false);
    let e = convert(&d, WeightStorage::Float).err().unwrap();
    assert!(
        e.contains("model_type \"gpt2\" is not a family Ember builds; it knows: bert"),
        "{e}"
    );
    // A weight missing.
    let mut w = weights("");
    w.retain(|(n, _, _)| n != "encoder.layer.1.output.dense.weight");
    let d = folder_of("missing", &w, &["mean_tokens"], false);
    let e = convert(&d, WeightStorage::Float).err().unwrap();
    assert!(
        e.starts_with(
            "layer \"encoder.layer.1.output.dense\": weight \"encoder.layer.1.output.dense.weight\" \
             is not in the checkpoint"
        ),
        "{e}"
    );
    // A token table of the wrong width.
    let mut w = weights("");
    w[0] = (
        w[0].0.clone(),
        vec![VOCAB, HIDDEN + 1],
        vec![0.0; VOCAB * (HIDDEN + 1)],
    );
    let d = folder_of("shape", &w, &["mean_tokens"], false);
    let e = convert(&d, WeightStorage::Float).err().unwrap();
    assert_eq!(
        e,
        "layer \"embeddings.word_embeddings\": tensor \"embeddings.word_embeddings.weight\" [20, 9] \
         F32 for weight \"embeddings.word_embeddings.weight\": the layer needs [20, 8]"
    );
    // A module Ember does not implement.
    let d = folder("dense", &["mean_tokens"], false);
    std::fs::write(
        d.join("modules.json"),
        r#"[{"path": "", "type": "sentence_transformers.models.Transformer"},
            {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]"#,
    )
    .unwrap();
    let e = convert(&d, WeightStorage::Float).err().unwrap();
    assert!(e.contains("module \"Dense\""), "{e}");
    // An activation it does not implement.
    let d = scratch("act");
    let mut cfg = config("bert");
    cfg["hidden_act"] = "swish".into();
    write_folder(&d, &cfg, &safetensors(&weights("")), &[], false);
    let e = convert(&d, WeightStorage::Float).err().unwrap();
    assert!(e.contains("hidden_act \"swish\" is not implemented"), "{e}");
    // --shape of an input the model does not have, or of the wrong rank, or too long.
    let d = folder("shapes", &["mean_tokens"], false);
    let files = ModelFiles::open(&d).unwrap();
    for (shape, want) in [
        (
            ("pixel_values", vec![1, 4]),
            "input \"pixel_values\": --shape names no input",
        ),
        (("input_ids", vec![4]), "give [batch, sequence length]"),
        (
            ("input_ids", vec![1, MAX_POS + 1]),
            "at most max_position_embeddings (16)",
        ),
    ] {
        let o = ConvertOptions {
            shapes: vec![(shape.0.to_string(), shape.1)],
            ..ConvertOptions::default()
        };
        let e = hf::convert(&files, &o, &hf::Options::default(), WeightStorage::Float)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(want), "{e}");
    }
    // Not a model folder at all.
    let e = ModelFiles::open(&scratch("empty"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("holds no config.json"), "{e}");
}
