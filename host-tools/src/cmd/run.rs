//! `ember run`: run a blob on the host CPU with `.npy` inputs, optionally checking against expected outputs.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use ember_core::Model;

use super::common::{
    bind, compare_f64, cpu_label, expect_exit, host_arena, host_cpu, input_bytes, io_name, parse,
    print_values, read_blob, shape_str, RunArgs,
};
use crate::npy;

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    if !args.device.eq_ignore_ascii_case("cpu") {
        return super::device::run(args);
    }
    let blob = read_blob(&args.model)?;
    let model = parse(&blob, &args.model)?;
    let cpu = host_cpu(args.threads)?;
    let mut arena = host_arena(&cpu, &model)?;
    let mut session = cpu.session(&model, arena.as_mut_bytes())?;

    let inputs = bind(&model, model.inputs(), &args.inputs, "input")?;
    if inputs.len() != model.inputs().len() {
        let missing: Vec<String> = (0..model.inputs().len())
            .filter(|p| !inputs.iter().any(|(q, _)| q == p))
            .map(|p| io_name(&model, model.inputs()[p], &format!("input{p}")))
            .collect();
        bail!(
            "no file given for input(s) {}; pass --input NAME=x.npy",
            missing.join(", ")
        );
    }
    let mut arrays = Vec::with_capacity(inputs.len());
    for &(pos, file) in &inputs {
        let name = io_name(&model, model.inputs()[pos], &format!("input{pos}"));
        let arr = npy::read_typed(Path::new(file)).with_context(|| format!("input {name:?}"))?;
        arrays.push((pos, file, name, arr));
    }
    arrays.sort_by_key(|a| a.0);
    let fit = super::common::choose_variant(
        &mut session,
        &arrays.iter().map(|a| &a.3.shape[..]).collect::<Vec<_>>(),
    )?;
    let variant = session.model().clone();

    // Graph inputs are consumed by a run (later ops may reuse their arena bytes), so they are written
    // again before every run.
    let mut loaded: Vec<(usize, Vec<u32>, Vec<u8>)> = Vec::new();
    for (pos, file, name, arr) in arrays {
        let t = session.input(pos)?;
        let (want, want_type) = (
            t.dims().iter().map(|&d| d as usize).collect::<Vec<usize>>(),
            t.dtype(),
        );
        // A shorter input the variant covers is padded when written (`choose_variant` said so).
        let covered = fit.padded
            && model.pad_value(pos).is_some()
            && arr.shape.len() == want.len()
            && arr.shape.iter().zip(&want).all(|(a, w)| a <= w);
        if arr.shape != want && !covered {
            let hint = if arr.shape.len() == want.len() && arr.shape[1..] == want[1..] {
                format!(
                    "; to run a batch of {}, convert with --shape {name}={}",
                    arr.shape[0],
                    arr.shape
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            } else {
                String::new()
            };
            bail!(
                "input {name:?}: the model expects shape {} {}, {file} has shape {}{hint}",
                shape_str(&want),
                want_type.name(),
                shape_str(&arr.shape)
            );
        }
        let quant = variant
            .tensor(variant.inputs()[pos] as usize)
            .and_then(|t| t.quant);
        let shape = arr.shape.iter().map(|&d| d as u32).collect();
        let bytes = input_bytes(arr, want_type, quant)
            .with_context(|| format!("input {name:?} ({file})"))?;
        loaded.push((pos, shape, bytes));
    }

    let mut times = Vec::with_capacity(args.repeat.max(1));
    let clock = ember_core::StdClock::default();
    let mut per_op: Vec<Vec<u64>> = vec![Vec::new(); variant.op_count()];
    for _ in 0..args.repeat.max(1) {
        for (pos, shape, data) in &loaded {
            session.write_input(*pos, shape, data)?;
        }
        let start = Instant::now();
        if args.profile {
            session.run_profiled(&clock, &mut |e| {
                if let Some(v) = per_op.get_mut(e.index) {
                    v.push(e.ticks);
                }
            })?;
        } else {
            session.run()?;
        }
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    if args.profile {
        print_profile(&variant, &cpu, &mut per_op);
    }

    for (pos, &id) in model.outputs().iter().enumerate() {
        let out = session.output(pos)?;
        let values: Vec<f32> = npy::to_f64(out.dtype(), out.bytes())
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let name = io_name(&model, id, &format!("output{pos}"));
        println!(
            "output {name:?} {} {}:",
            shape_str(out.dims()),
            out.dtype().name()
        );
        print_values(&values, out.dims());
    }
    println!(
        "time: {:.1} us (median of {} run{}), arena {} bytes, {}",
        median.as_secs_f64() * 1e6,
        times.len(),
        if times.len() == 1 { "" } else { "s" },
        session.memory_report().used_bytes,
        cpu_label(&cpu)
    );

    for (pos, file) in bind(&model, model.outputs(), &args.outputs, "output")? {
        let out = session.output(pos)?;
        let dims: Vec<usize> = out.dims().iter().map(|&d| d as usize).collect();
        npy::write_typed(Path::new(file), &dims, out.dtype(), out.bytes())?;
        println!("wrote {file}");
    }

    let mut ok = true;
    for (pos, file) in bind(&model, model.outputs(), &args.expects, "output")? {
        let name = io_name(&model, model.outputs()[pos], &format!("output{pos}"));
        let out = session.output(pos)?;
        let dims: Vec<usize> = out.dims().iter().map(|&d| d as usize).collect();
        let want = npy::read_typed(Path::new(file))
            .with_context(|| format!("expected output {name:?}"))?;
        let quant = variant
            .tensor(variant.outputs()[pos] as usize)
            .and_then(|t| t.quant);
        let mut got = npy::to_f64(out.dtype(), out.bytes());
        match (out.dtype(), want.dtype, quant) {
            (a, b, _) if a == b => {}
            // A float expectation for a quantized output: compare the dequantized values.
            (ember_core::DType::I8, ember_core::DType::F32, Some(q)) => {
                for v in &mut got {
                    *v = f64::from(q.scale) * (*v - f64::from(q.zero_point));
                }
            }
            (a, b, _) => bail!(
                "expected output {name:?}: the model produces {}, {file} holds {}",
                a.name(),
                b.name()
            ),
        }
        let want_values = npy::to_f64(want.dtype, &want.bytes);
        if want.shape != dims {
            bail!(
                "expected output {name:?}: the model produces shape {}, {file} has shape {}",
                shape_str(&dims),
                shape_str(&want.shape)
            );
        }
        let cmp = compare_f64(&got, &want_values, args.atol, args.rtol);
        ok &= cmp.report(&name, got.len(), args.atol, args.rtol);
    }
    Ok(expect_exit(ok))
}

/// Prints one line per op: its median time over the runs (nanosecond ticks) and its share of the sum.
fn print_profile(model: &Model<'_>, cpu: &ember_cpu::Cpu, per_op: &mut [Vec<u64>]) {
    let medians: Vec<u64> = per_op
        .iter_mut()
        .map(|v| {
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        })
        .collect();
    let total: u64 = medians.iter().sum::<u64>().max(1);
    println!("profile (median per op, {}):", cpu_label(cpu));
    println!(
        "  {:>3}  {:<24} {:<16} {:<24} {:>10} {:>6}",
        "#", "node", "op", "kernel", "us", "%"
    );
    for (i, &ns) in medians.iter().enumerate() {
        let record = model.op(i);
        let op = record.as_ref().map(|o| o.kind.name()).unwrap_or("?");
        let kernel = record
            .as_ref()
            .map(|o| ember_cpu::variant(cpu.isa(), &o.kind))
            .unwrap_or("?");
        println!(
            "  {:>3}  {:<24} {:<16} {:<24} {:>10.2} {:>5.1}%",
            i,
            model.op_name(i).unwrap_or("-"),
            op,
            kernel,
            ns as f64 / 1e3,
            100.0 * ns as f64 / total as f64
        );
    }
}
