//! `ember demo`: the main job end to end on the bundled digits CNN (8x8 scikit-learn digits): convert the
//! ONNX model, write and reload the blob, run every held-out image on the host CPU, and compare with the
//! labels and with onnxruntime's outputs (computed when the model was made, see tests/models/digits).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use ember_convert::{convert, ConvertOptions};

use super::common::{argmax, compare, cpu_label, host_arena, host_cpu, parse, progress, read_blob};
use crate::npy;

const MODEL: &[u8] = include_bytes!("../../../tests/models/digits/model.onnx");
const IMAGES: &[u8] = include_bytes!("../../../tests/models/digits/x.npy");
const LABELS: &[u8] = include_bytes!("../../../tests/models/digits/labels.npy");
const GOLDEN: &[u8] = include_bytes!("../../../tests/models/digits/y.npy");

#[derive(clap::Args)]
pub struct Args {
    /// Where to write the converted blob (default: digits.ember in the system's temp folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let out = match &args.out {
        Some(p) => p.clone(),
        None => std::env::temp_dir().join("ember-demo").join("digits.ember"),
    };
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }

    println!("Ember demo: digits CNN (8x8 scikit-learn digits), ONNX -> .ember -> host CPU");
    let start = Instant::now();
    let opts = ConvertOptions {
        shapes: vec![("input".to_string(), vec![1, 1, 8, 8])],
        keep_names: true,
        ..Default::default()
    };
    let converted = convert(MODEL, &opts).context("cannot convert the bundled digits model")?;
    crate::emit::write(&out, &converted.blob)?;
    println!(
        "converted  tests/models/digits/model.onnx ({} bytes) -> {} ({} bytes) in {:.1} ms",
        MODEL.len(),
        out.display(),
        converted.blob.len(),
        start.elapsed().as_secs_f64() * 1e3
    );

    let blob = read_blob(&out)?;
    let model = parse(&blob, &out)?;
    let cpu = host_cpu(1)?;
    let mut arena = host_arena(&cpu, &model)?;
    let mut session = cpu.session(&model, arena.as_mut_bytes())?;

    let images = npy::parse_f32(IMAGES, "bundled x.npy")?;
    let labels = npy::parse_i64(LABELS, "bundled labels.npy")?;
    let golden = npy::parse_f32(GOLDEN, "bundled y.npy")?;
    let n = images.shape[0];
    let pixels = images.data.len() / n;
    let classes = golden.data.len() / n;
    if labels.len() != n || golden.shape[0] != n {
        bail!(
            "bundled data is inconsistent: {n} images, {} labels, {} golden rows",
            labels.len(),
            golden.shape[0]
        );
    }

    let pb = progress(n as u64, "running");
    let (mut ember_ok, mut ort_ok, mut agree, mut max_diff) = (0, 0, 0, 0.0f32);
    let mut times = Vec::with_capacity(n);
    for (i, &label) in labels.iter().enumerate() {
        session
            .input(0)?
            .write_f32(&images.data[i * pixels..(i + 1) * pixels])?;
        let t = Instant::now();
        session.run()?;
        times.push(t.elapsed());
        let probs = session.output(0)?.as_f32()?;
        let want = &golden.data[i * classes..(i + 1) * classes];
        let (ours, theirs) = (argmax(probs), argmax(want));
        ember_ok += usize::from(ours as i64 == label);
        ort_ok += usize::from(theirs as i64 == label);
        agree += usize::from(ours == theirs);
        max_diff = max_diff.max(compare(probs, want, 0.0, 0.0).max_diff);
        pb.inc(1);
    }
    pb.finish_and_clear();
    times.sort();
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let m = session.memory_report();

    println!("images     {n} held-out test images");
    println!(
        "accuracy   Ember {:.2}%   onnxruntime {:.2}%   (same top-1 on {agree}/{n})",
        pct(ember_ok, n),
        pct(ort_ok, n)
    );
    println!("max |diff| {max_diff:.2e} against onnxruntime's probabilities");
    println!(
        "memory     arena {} bytes (activations {}, lower bound {}, scratch {}, persistent {}); peak touched {}",
        m.used_bytes, m.planned_bytes, m.lower_bound_bytes, m.scratch_bytes, m.persistent_bytes, m.peak_bytes
    );
    println!(
        "model      blob {} bytes, weights {} bytes, {} ops",
        model.blob_bytes(),
        model.weights_bytes(),
        model.op_count()
    );
    println!(
        "latency    median {:.1} us, p90 {:.1} us, min {:.1} us per image (batch 1, {})",
        us(times[n / 2]),
        us(times[n * 9 / 10]),
        us(times[0]),
        cpu_label(&cpu)
    );
    if agree != n || max_diff > 1e-4 {
        eprintln!("error: Ember disagrees with onnxruntime (top-1 {agree}/{n}, max |diff| {max_diff:.2e} > 1e-4)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn pct(k: usize, n: usize) -> f64 {
    100.0 * k as f64 / n as f64
}
