//! `ember bench`: latency and memory of one model on the host CPU, for humans or (with `--json`) for
//! `cargo xtask bench`, which puts the figures next to onnxruntime's.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ember_convert::{convert, ConvertOptions};
use ember_core::{AlignedBuf, DType, Model, Session};

use super::common::{
    cpu_label, host_arena, host_cpu, input_bytes, parse, parse_shape, shape_str, split_named,
};
use crate::npy;

#[derive(clap::Args)]
pub struct Args {
    /// An .ember blob, or an .onnx model (converted in memory first).
    pub model: PathBuf,
    /// An input as x.npy or NAME=x.npy (repeatable); without one, deterministic values in [0, 1). A blob
    /// with shape variants takes several sets of inputs, timed in turn and reported a row each.
    #[arg(long = "input", value_name = "[NAME=]FILE")]
    pub inputs: Vec<String>,
    /// For an .onnx model: fix an input's dims, as NAME=1,3,48,192 (repeatable). Defaults to the shapes
    /// of the --input files.
    #[arg(long = "shape", value_name = "NAME=DIMS")]
    pub shapes: Vec<String>,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 200)]
    pub repeat: usize,
    /// Untimed runs first.
    #[arg(long, default_value_t = 20)]
    pub warmup: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// CPU worker threads, the calling one included (0: one per core).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

#[derive(serde::Serialize)]
struct Figures {
    model: String,
    /// The shape variant that ran (`T=25`), for a model with several.
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
    runs: usize,
    median_us: f64,
    p90_us: f64,
    min_us: f64,
    ops: usize,
    /// The kernel table that ran (`cpu-avx2`, ...) and the worker threads.
    kernels: &'static str,
    threads: usize,
    arena_bytes: usize,
    activation_bytes: u32,
    lower_bound_bytes: u32,
    /// Activation bytes of TFLM's greedy plan, from the conversion report (null for an .ember input,
    /// whose blob does not record it).
    greedy_activation_bytes: Option<u32>,
    scratch_bytes: usize,
    persistent_bytes: u32,
    blob_bytes: usize,
    weights_bytes: usize,
    /// Heap allocations made by the timed runs and the variant switches before them (the input
    /// writes not included): 0 for Ember.
    allocations: usize,
    /// Whether every timed run's outputs equal those of a fresh session given the same inputs.
    outputs_match: bool,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let mut files: Vec<(Option<String>, npy::Typed)> = Vec::new();
    for arg in &args.inputs {
        let (name, file) = split_named(arg);
        files.push((name.map(str::to_string), npy::read_typed(Path::new(file))?));
    }
    let bytes = std::fs::read(&args.model)
        .with_context(|| format!("cannot read {}", args.model.display()))?;
    let tflite = ember_convert::tflite::is_tflite(&bytes);
    let is_onnx = tflite || args.model.extension().is_some_and(|e| e == "onnx");
    let mut greedy_activation_bytes = None;
    let blob = if is_onnx {
        let mut shapes = args
            .shapes
            .iter()
            .map(|s| parse_shape(s))
            .collect::<Result<Vec<_>>>()?;
        // A .tflite has static shapes of its own.
        if shapes.is_empty() && !files.is_empty() && !tflite {
            // The input files give the shapes: the graph's input names say which is which.
            let names = ember_convert::onnx::graph_input_names(&bytes)
                .with_context(|| format!("cannot read {}", args.model.display()))?;
            for (k, (name, arr)) in files.iter().enumerate() {
                let name = name.clone().or_else(|| names.get(k).cloned());
                if let Some(name) = name {
                    shapes.push((name, arr.shape.clone()));
                }
            }
        }
        let opts = ConvertOptions {
            shapes,
            keep_names: true,
            // TFLite's arithmetic for a .tflite, as `ember convert` does by default.
            rounding: if tflite {
                ember_convert::RequantRounding::Double
            } else {
                ember_convert::RequantRounding::Single
            },
            ..Default::default()
        };
        let converted = convert(&bytes, &opts)
            .with_context(|| format!("cannot convert {}", args.model.display()))?;
        greedy_activation_bytes = Some(converted.report.greedy_activation_bytes);
        AlignedBuf::from_bytes(&converted.blob)
    } else {
        AlignedBuf::from_bytes(&bytes)
    };
    let model = parse(&blob, &args.model)?;
    let cpu = host_cpu(args.threads)?;
    let mut arena = host_arena(&cpu, &model)?;
    let mut session = cpu.session(&model, arena.as_mut_bytes())?;
    // Each set of input files is a row; with shape variants, each runs the variant its shapes pick.
    let sets = input_sets(&model, files);
    let mut variants = Vec::with_capacity(sets.len());
    for set in &sets {
        if model.variant_count() > 1 {
            let given = given(&model, set)?;
            if given.iter().any(Option::is_none) {
                bail!(
                    "the model has shape variants: give a file for each input, so its shapes pick one"
                );
            }
            let shapes: Vec<&[usize]> = given.iter().flatten().map(|a| &a.shape[..]).collect();
            super::common::choose_variant(&mut session, &shapes)?;
        }
        variants.push(session.variant());
    }
    // What a fresh session gives for each set, which every timed run must give again.
    let mut fresh = Vec::with_capacity(sets.len());
    for (set, &variant) in sets.iter().zip(&variants) {
        let mut arena = host_arena(&cpu, &model)?;
        let mut s = cpu.session(&model, arena.as_mut_bytes())?;
        s.set_variant(variant)?;
        fill_inputs(&model, &mut s, set)?;
        s.run()?;
        fresh.push(outputs(&s)?);
    }
    // Graph inputs are consumed by a run (later ops may reuse their bytes): write them before every run,
    // outside the timed region. The sets take turns, so that a slower moment of the machine falls on all.
    let repeat = args.repeat.max(1);
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(repeat); sets.len()];
    let mut allocations = vec![0usize; sets.len()];
    let mut outputs_match = vec![true; sets.len()];
    for round in 0..args.warmup + repeat {
        for (k, (set, &variant)) in sets.iter().zip(&variants).enumerate() {
            let counted = stats_alloc::Region::new(crate::ALLOCATOR);
            session.set_variant(variant)?;
            let mut made = counted.change().allocations;
            fill_inputs(&model, &mut session, set)?;
            let counted = stats_alloc::Region::new(crate::ALLOCATOR);
            let t = Instant::now();
            session.run()?;
            let elapsed = t.elapsed();
            made += counted.change().allocations;
            if round >= args.warmup {
                times[k].push(elapsed);
                allocations[k] += made;
                outputs_match[k] &= outputs(&session)? == fresh[k];
            }
        }
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut rows = Vec::with_capacity(sets.len());
    for (k, (&variant, mut times)) in variants.iter().zip(times).enumerate() {
        session.set_variant(variant)?;
        times.sort();
        let plan = session.model().plan();
        let memory = session.memory_report();
        rows.push(Figures {
            model: args.model.display().to_string(),
            variant: (model.variant_count() > 1)
                .then(|| super::common::variant_name(&model, variant)),
            runs: times.len(),
            median_us: us(times[times.len() / 2]),
            p90_us: us(times[times.len() * 9 / 10]),
            min_us: us(times[0]),
            ops: session.model().op_count(),
            kernels: ember_cpu::table(cpu.isa()).name,
            threads: cpu.threads(),
            arena_bytes: memory.used_bytes,
            activation_bytes: plan.activation_bytes,
            lower_bound_bytes: plan.lower_bound_bytes,
            greedy_activation_bytes,
            scratch_bytes: memory.scratch_bytes,
            persistent_bytes: plan.persistent_bytes,
            blob_bytes: model.blob_bytes(),
            weights_bytes: model.weights_bytes(),
            allocations: allocations[k],
            outputs_match: outputs_match[k],
        });
    }
    for f in &rows {
        if args.json {
            println!("{}", serde_json::to_string(f)?);
            continue;
        }
        if f.variant.is_none() || std::ptr::eq(f, &rows[0]) {
            println!("{}", f.model);
        }
        if let Some(v) = &f.variant {
            println!("  variant  {v}");
        }
        println!(
            "  latency  median {:.1} us, p90 {:.1} us, min {:.1} us ({} runs after {} warm-up, {})",
            f.median_us,
            f.p90_us,
            f.min_us,
            f.runs,
            args.warmup,
            cpu_label(&cpu)
        );
        let greedy = f
            .greedy_activation_bytes
            .map(|g| format!(", greedy {g}"))
            .unwrap_or_default();
        println!(
            "  memory   arena {} bytes: activations {} (lower bound {}{greedy}), scratch {}, persistent {}",
            f.arena_bytes,
            f.activation_bytes,
            f.lower_bound_bytes,
            f.scratch_bytes,
            f.persistent_bytes
        );
        println!(
            "  model    blob {} bytes, weights {} bytes, {} ops",
            f.blob_bytes, f.weights_bytes, f.ops
        );
        println!(
            "  heap     {} allocation(s) in the timed runs{}; outputs {} a fresh session's",
            f.allocations,
            if rows.len() > 1 {
                " and the variant switches before them"
            } else {
                ""
            },
            if f.outputs_match {
                "equal to"
            } else {
                "DIFFER from"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The bytes of every graph output, after a run.
fn outputs(session: &Session<'_>) -> Result<Vec<Vec<u8>>> {
    (0..session.model().outputs().len())
        .map(|i| Ok(session.output(i)?.bytes().to_vec()))
        .collect()
}

/// The sets of input files to time, one row each. A model with shape variants takes several, in order:
/// on a one-input model `--input a.npy --input b.npy` is two sets; on a model with inputs `ids` and
/// `mask`, a name the current set already has starts the next one. Otherwise all files are one set.
fn input_sets(
    model: &Model<'_>,
    files: Vec<(Option<String>, npy::Typed)>,
) -> Vec<Vec<(Option<String>, npy::Typed)>> {
    let inputs = model.inputs().len().max(1);
    if model.variant_count() < 2 || files.len() <= inputs {
        return vec![files];
    }
    let mut sets: Vec<Vec<(Option<String>, npy::Typed)>> = Vec::new();
    for file in files {
        match sets.last_mut() {
            Some(set)
                if set.len() < inputs
                    && !set
                        .iter()
                        .any(|(name, _)| name.is_some() && *name == file.0) =>
            {
                set.push(file)
            }
            _ => sets.push(vec![file]),
        }
    }
    sets
}

/// Writes the given files into the inputs (by name, else in order), and deterministic values in [0, 1)
/// into inputs without a file.
fn fill_inputs(
    model: &Model<'_>,
    session: &mut Session<'_>,
    files: &[(Option<String>, npy::Typed)],
) -> Result<()> {
    let given = given(model, files)?;
    let mut state = 0x2545_F491_u32;
    for (pos, arr) in given.into_iter().enumerate() {
        match arr {
            Some(arr) => {
                let t = session.input(pos)?;
                let (want, dtype) = (t.dims().to_vec(), t.dtype());
                let quant = session
                    .model()
                    .tensor(session.model().inputs()[pos] as usize)
                    .and_then(|t| t.quant);
                let shape: Vec<u32> = arr.shape.iter().map(|&d| d as u32).collect();
                let bytes = input_bytes(arr.clone(), dtype, quant)
                    .with_context(|| format!("input {pos}"))?;
                // Another shape than the variant's is padded where the model allows it.
                session.write_input(pos, &shape, &bytes).with_context(|| {
                    format!(
                        "input {pos}: the model expects shape {}, the file has {}",
                        shape_str(&want),
                        shape_str(&arr.shape)
                    )
                })?;
            }
            None => {
                let mut next = || {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    state
                };
                let mut t = session.input(pos)?;
                match t.dtype() {
                    DType::F32 => t
                        .as_f32_mut()?
                        .iter_mut()
                        .for_each(|v| *v = (next() >> 8) as f32 / (1u32 << 24) as f32),
                    // An int8 or uint8 input takes every byte value; wider integers (ids, indices)
                    // and bools stay 0, which every such input accepts.
                    DType::I8 | DType::U8 => {
                        t.bytes_mut().iter_mut().for_each(|b| *b = next() as u8)
                    }
                    _ => t.bytes_mut().fill(0),
                }
            }
        }
    }
    Ok(())
}

/// The file for each graph input: by name, else in order; `None` where none is given.
fn given<'f>(
    model: &Model<'_>,
    files: &'f [(Option<String>, npy::Typed)],
) -> Result<Vec<Option<&'f npy::Typed>>> {
    let mut next = 0;
    let mut given: Vec<Option<&npy::Typed>> = vec![None; model.inputs().len()];
    for (name, arr) in files {
        let pos = match name {
            Some(n) => model
                .inputs()
                .iter()
                .position(|&id| model.tensor_name(id as usize) == Some(n.as_str()))
                .with_context(|| format!("the model has no input named {n:?}"))?,
            None => {
                next += 1;
                next - 1
            }
        };
        match given.get_mut(pos) {
            Some(slot) => *slot = Some(arr),
            None => bail!(
                "more input files than the model has inputs ({})",
                model.inputs().len()
            ),
        }
    }
    Ok(given)
}
