//! `ember inspect`: what a blob holds.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use ember_core::format::Storage;

use super::common::{parse, read_blob, shape_str};

mod control;
mod passes;
mod plot;
pub use passes::run_passes;

/// Prints what the blob at `path` holds and, with `plot`, draws its arena plan into that SVG file;
/// with `device`, where its ops run on that device (`ember inspect --device vulkan`). An
/// ONNX model is converted in memory first (with the `--shape` overrides and the `--weights` bound,
/// whose report is printed), as `ember convert` would.
pub fn run(
    path: &Path,
    shapes: &[String],
    plot: Option<&Path>,
    device: Option<&str>,
    weights: &super::weights::WeightArgs,
) -> Result<ExitCode> {
    let blob = read_blob(path)?;
    let blob = if blob.as_bytes().starts_with(&ember_core::format::MAGIC) {
        passes::no_weights_for_a_blob(path, weights)?;
        blob
    } else {
        eprintln!(
            "note: {} is not an .ember blob; converting it in memory as an ONNX or TFLite model \
             (`ember convert` writes the blob)",
            path.display()
        );
        let converted = passes::convert_in_memory(path, blob.as_bytes(), shapes, weights)?;
        ember_core::AlignedBuf::from_bytes(&converted.blob)
    };
    let code = show(path, &blob)?;
    if let Some(device) = device.filter(|d| !d.eq_ignore_ascii_case("cpu")) {
        let ops = parse(&blob, path)?.op_count();
        super::device::inspect(&blob, device, ops)?;
    }
    if let Some(svg) = plot {
        let model = parse(&blob, path)?;
        crate::emit::write(svg, plot::arena_svg(&model).as_bytes())?;
        println!();
        println!("wrote {}", svg.display());
    }
    Ok(code)
}

/// Prints what `blob` (read from, or converted from, `path`) holds.
fn show(path: &Path, blob: &ember_core::AlignedBuf) -> Result<ExitCode> {
    let model = parse(blob, path)?;
    let info = model.info();
    let plan = model.plan();
    println!("{}", path.display());
    println!("  producer      {}", String::from_utf8_lossy(info.producer));
    println!(
        "  blob          {} bytes (weights {} bytes)",
        model.blob_bytes(),
        model.weights_bytes()
    );
    println!(
        "  arena         {} bytes: persistent {}, activations {} (lower bound {}), scratch {}",
        model.arena_bytes(),
        plan.persistent_bytes,
        plan.activation_bytes,
        plan.lower_bound_bytes,
        plan.scratch_bytes
    );
    if model.variant_count() > 1 {
        println!(
            "  variants      {} (the largest, {}, below; `ember run` picks one by its inputs' shapes)",
            model.variant_count(),
            super::common::variant_name(&model, model.variant_index())
        );
        for i in 0..model.variant_count() {
            let v = model.variant(i)?;
            let p = v.plan();
            let inputs: Vec<String> = v
                .inputs()
                .iter()
                .filter_map(|&id| v.tensor(id as usize))
                .map(|t| shape_str(&t.dims))
                .collect();
            println!(
                "    {:<16} {:>4} ops, activations {:>9} (lower bound {}), scratch {}; inputs {}",
                super::common::variant_name(&model, i),
                v.op_count(),
                p.activation_bytes,
                p.lower_bound_bytes,
                p.scratch_bytes,
                inputs.join(", ")
            );
        }
    }
    // What a firmware running this model links (`Kernels::only(model.kernel_entries())`).
    if let Ok(entries) = model.kernel_entries() {
        let names: Vec<&str> = ember_core::kernels::entry::names(entries).collect();
        println!("  kernels       {} ({entries:#x})", names.join(", "));
    }
    let name = |i: usize| {
        model
            .tensor_name(i)
            .map(str::to_string)
            .unwrap_or_else(|| format!("t{i}"))
    };
    let dims = |i: usize| {
        model
            .tensor(i)
            .map(|t| shape_str(&t.dims))
            .unwrap_or_default()
    };
    let quant = |i: usize| {
        model
            .tensor(i)
            .and_then(|t| t.quant)
            .map(|q| format!(" scale={} zero_point={}", q.scale, q.zero_point))
            .unwrap_or_default()
    };
    for (what, ids) in [("input ", model.inputs()), ("output", model.outputs())] {
        for &id in ids {
            let dtype = model
                .tensor(id as usize)
                .map(|t| t.dtype.name())
                .unwrap_or("?");
            println!(
                "  {what}        {} {} {dtype}{}",
                name(id as usize),
                dims(id as usize),
                quant(id as usize)
            );
        }
    }
    println!();
    // The kernels `ember run` uses on this machine (EMBER_CPU_ISA forces a lower level).
    let isa = ember_cpu::Isa::detect().map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "  kernels on this CPU: {} (EMBER_CPU_ISA picks another level)",
        ember_cpu::table(isa).name
    );
    println!(
        "  {:>3}  {:<18} {:<16} {:<22} inputs -> output",
        "#", "node", "op", "kernel"
    );
    let nesting = control::nesting(&model);
    for i in 0..model.op_count() {
        let Some(op) = model.op(i) else { continue };
        let node = model.op_name(i).unwrap_or("-");
        let node = format!("{}{node}", "  ".repeat(nesting.depth[i]));
        let ins: Vec<String> = op
            .inputs
            .iter()
            .map(|&t| format!("{}{}", name(t as usize), dims(t as usize)))
            .collect();
        println!(
            "  {:>3}  {:<18} {:<16} {:<22} {} -> {}{}",
            i,
            node,
            op.kind.name(),
            ember_cpu::variant(isa, &op.kind),
            ins.join(", "),
            name(op.output as usize),
            dims(op.output as usize)
        );
    }
    control::print_plans(&model, &nesting);
    println!();
    println!(
        "  {:>3}  {:<20} {:<16} {:<7} {:<22} {:<10} quantization",
        "#", "tensor", "shape", "dtype", "storage", "live ops"
    );
    for i in 0..model.tensor_count() {
        let Some(t) = model.tensor(i) else { continue };
        let storage = match t.storage {
            Storage::Weights { offset } => format!("weights @{offset}"),
            Storage::Arena { offset } => format!("arena @{offset}"),
        };
        let live = match t.storage {
            Storage::Weights { .. } => "-".to_string(),
            Storage::Arena { .. } if t.last_use == u32::MAX => format!("{}..end", t.first_use),
            Storage::Arena { .. } => format!("{}..{}", t.first_use, t.last_use),
        };
        let quantization = t
            .quant
            .map(|q| format!("scale {} zero point {}", q.scale, q.zero_point))
            .unwrap_or_default();
        println!(
            "  {:>3}  {:<20} {:<16} {:<7} {:<22} {:<10} {}",
            i,
            name(i),
            shape_str(&t.dims),
            t.dtype.name(),
            storage,
            live,
            quantization
        );
    }
    Ok(ExitCode::SUCCESS)
}
