//! `ember run --device vulkan|metal|cuda|best` (through `ember-gpu`'s `DeviceSession`) and `ember devices`
//! (GPUs through Vulkan, and debug probes).

use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};

use super::common::RunArgs;

/// Runs `args.model` on `args.device` (anything but the CPU reference path).
#[cfg(feature = "gpu")]
pub fn run(args: &RunArgs) -> Result<ExitCode> {
    use std::path::Path;
    use std::time::Instant;

    use anyhow::Context;
    use ember_gpu::{Device, DeviceSession};

    use super::common::{
        bind, compare, expect_exit, io_name, parse, print_values, read_blob, shape_str,
    };
    use crate::npy;

    let device: Device = args.device.parse()?;
    let blob = read_blob(&args.model)?;
    let model = parse(&blob, &args.model)?;
    let mut session = DeviceSession::new(blob.as_bytes(), device)?;
    if !session.host_ops().is_empty() {
        eprintln!("note: {}", host_note(&session, model.op_count(), Some(6)));
    }
    let inputs = bind(&model, model.inputs(), &args.inputs, "input")?;
    if inputs.len() != model.inputs().len() {
        bail!(
            "give one --input per graph input ({})",
            model.inputs().len()
        );
    }
    let mut files = Vec::new();
    for &(pos, file) in &inputs {
        let name = io_name(&model, model.inputs()[pos], &format!("input{pos}"));
        let arr = npy::read_f32(Path::new(file)).with_context(|| format!("input {name:?}"))?;
        files.push((pos, file, name, arr));
    }
    if session.variant_count() > 1 {
        // A blob with shape variants runs the one the input files' shapes pick.
        files.sort_by_key(|f| f.0);
        let shapes: Vec<Vec<u32>> = files
            .iter()
            .map(|f| f.3.shape.iter().map(|&d| d as u32).collect())
            .collect();
        let shapes: Vec<&[u32]> = shapes.iter().map(Vec::as_slice).collect();
        match session.set_input_shapes(&shapes) {
            Ok(fit) if fit.padded => {
                let given: Vec<&[usize]> = files.iter().map(|f| &f.3.shape[..]).collect();
                let variant = model.variant(fit.variant)?;
                eprintln!("{}", super::common::pad_note(&variant, &model, &given));
            }
            Ok(_) => {}
            Err(_) => {
                let given: Vec<String> = files.iter().map(|f| shape_str(&f.3.shape)).collect();
                bail!(
                    "no shape variant of the model takes inputs of shape {}; it has:\n{}",
                    given.join(" and "),
                    super::common::variant_lines(&model).join("\n")
                );
            }
        }
    }
    let mut loaded = Vec::new();
    for (pos, file, name, arr) in files {
        let want: Vec<usize> = session
            .input(pos)?
            .dims()
            .iter()
            .map(|&d| d as usize)
            .collect();
        // A smaller input the variant covers is padded as it is written.
        let covered = model.pad_value(pos).is_some()
            && arr.shape.len() == want.len()
            && arr.shape.iter().zip(&want).all(|(a, w)| a <= w);
        if arr.shape != want && !covered {
            bail!(
                "input {name:?}: the model expects shape {} float32, {file} has shape {}",
                shape_str(&want),
                shape_str(&arr.shape)
            );
        }
        let shape: Vec<u32> = arr.shape.iter().map(|&d| d as u32).collect();
        loaded.push((pos, shape, arr.data));
    }
    let write_inputs = |session: &mut DeviceSession<'_>| -> Result<()> {
        for (pos, shape, data) in &loaded {
            session.input(*pos)?.write_padded(shape, data)?;
        }
        Ok(())
    };
    if args.profile && device.is_gpu() {
        // The first run compiles the kernels; profile a later one.
        write_inputs(&mut session)?;
        session.run()?;
    }
    let mut times = Vec::new();
    let mut profile = None;
    for _ in 0..args.repeat.max(1) {
        write_inputs(&mut session)?;
        let start = Instant::now();
        if args.profile {
            profile = Some(session.run_profiled()?);
        } else {
            session.run()?;
        }
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    if let Some(p) = &profile {
        println!(
            "profile (last run, {} on {}):",
            p.source,
            session.device_name()
        );
        println!("  {:>3}  {:<24} {:<16} {:>10}", "#", "node", "op", "us");
        for op in &p.ops {
            println!(
                "  {:>3}  {:<24} {:<16} {:>10.2}",
                op.index,
                model.op_name(op.index).unwrap_or("-"),
                op.op,
                op.nanos as f64 / 1e3
            );
        }
        println!("  total {:.2} us", p.total_nanos as f64 / 1e3);
    }
    let outputs: Vec<_> = (0..model.outputs().len())
        .map(|pos| session.output(pos))
        .collect::<Result<_, _>>()?;
    for (pos, (&id, out)) in model.outputs().iter().zip(&outputs).enumerate() {
        let name = io_name(&model, id, &format!("output{pos}"));
        println!("output {name:?} {}:", shape_str(out.dims()));
        print_values(out.as_f32(), out.dims());
    }
    println!(
        "time: {:.1} us (median of {} run{}) on {}",
        median.as_secs_f64() * 1e6,
        times.len(),
        if times.len() == 1 { "" } else { "s" },
        session.device_name()
    );
    println!("memory: {}", session.memory_report());
    for (pos, file) in bind(&model, model.outputs(), &args.outputs, "output")? {
        let out = &outputs[pos];
        let dims: Vec<usize> = out.dims().iter().map(|&d| d as usize).collect();
        // An int8 output (read as its integer values) is written as int8, as on the CPU.
        let dtype = model
            .tensor(model.outputs()[pos] as usize)
            .map_or(ember_core::DType::F32, |t| t.dtype);
        let bytes: Vec<u8> = match dtype {
            ember_core::DType::I8 => out.as_f32().iter().map(|&v| v as i8 as u8).collect(),
            _ => out.as_f32().iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        let dtype = if dtype == ember_core::DType::I8 {
            dtype
        } else {
            ember_core::DType::F32
        };
        npy::write_typed(Path::new(file), &dims, dtype, &bytes)?;
        println!("wrote {file}");
    }
    let mut ok = true;
    for (pos, file) in bind(&model, model.outputs(), &args.expects, "output")? {
        let name = io_name(&model, model.outputs()[pos], &format!("output{pos}"));
        let got = outputs[pos].as_f32();
        let want =
            npy::read_f32(Path::new(file)).with_context(|| format!("expected output {name:?}"))?;
        if want.data.len() != got.len() {
            bail!(
                "expected output {name:?}: {file} has {} values, the model produces {}",
                want.data.len(),
                got.len()
            );
        }
        let cmp = compare(got, &want.data, args.atol, args.rtol);
        ok &= cmp.report(&name, got.len(), args.atol, args.rtol);
    }
    Ok(expect_exit(ok))
}

/// Without the `gpu` feature only the CPU exists.
/// `N of M ops run on the host CPU inside the vulkan:0 session (...): #5 Equal (why), ...`: the
/// session's host ops (`ember_gpu::DeviceSession::host_ops`), the first `most` of them or all.
#[cfg(feature = "gpu")]
fn host_note(session: &ember_gpu::DeviceSession<'_>, ops: usize, most: Option<usize>) -> String {
    let host = session.host_ops();
    let listed: Vec<String> = host
        .iter()
        .take(most.unwrap_or(usize::MAX))
        .map(|(index, op, why)| format!("#{index} {op} ({why})"))
        .collect();
    format!(
        "{} of {ops} ops run on the host CPU inside the {} session (their device inputs are read \
         back, their device outputs written): {}{}",
        host.len(),
        session.device_name(),
        listed.join(", "),
        if host.len() > listed.len() {
            ", ..."
        } else {
            ""
        }
    )
}

/// `ember inspect --device`: opens a session for `blob` on `device` and says where each op runs
/// (on the device, or on the host inside the session, and why) and what the session holds.
#[cfg(feature = "gpu")]
pub fn inspect(blob: &ember_core::AlignedBuf, device: &str, ops: usize) -> Result<()> {
    let device: ember_gpu::Device = device.parse()?;
    let session = ember_gpu::DeviceSession::new(blob.as_bytes(), device)?;
    println!();
    println!("on {}:", session.device_name());
    if session.host_ops().is_empty() {
        println!("  every one of the {ops} ops runs on the device");
    } else {
        println!("  {}", host_note(&session, ops, None));
    }
    for line in session.memory_report().to_string().lines() {
        println!("  {line}");
    }
    Ok(())
}

#[cfg(not(feature = "gpu"))]
pub fn inspect(_blob: &ember_core::AlignedBuf, device: &str, _ops: usize) -> Result<()> {
    bail!(
        "device {device:?}: this ember was built without GPU support (rebuild ember-cli with \
         --features gpu)"
    )
}

#[cfg(not(feature = "gpu"))]
pub fn run(args: &RunArgs) -> Result<ExitCode> {
    bail!(
        "device {:?}: this ember was built without GPU support (rebuild ember-cli with --features gpu); \
         available devices: cpu",
        args.device
    )
}

/// `ember devices`: Vulkan devices (name, type, API version, memory heaps), then debug probes.
pub fn list() -> Result<ExitCode> {
    #[cfg(feature = "gpu")]
    {
        let gpus = ember_gpu::vulkan_devices();
        if gpus.is_empty() {
            println!("no Vulkan devices (no loader or no driver; lavapipe: apt-get install mesa-vulkan-drivers)");
        }
        for d in gpus {
            let heaps: Vec<String> = d
                .heaps
                .iter()
                .map(|h| {
                    format!(
                        "{:.1} GiB{}",
                        h.bytes as f64 / (1u64 << 30) as f64,
                        if h.device_local { " device-local" } else { "" }
                    )
                })
                .collect();
            println!(
                "vulkan:{}  {} ({}), Vulkan {}, heaps: {}",
                d.index,
                d.name,
                d.kind_name(),
                d.api_version,
                heaps.join(", ")
            );
        }
        if cfg!(feature = "gpu-cuda") {
            println!("cuda: compiled in (--device cuda[:N]; devices are the driver's)");
        } else {
            println!("cuda: not in this build (ember-cli --features gpu-cuda; see the README's GPU section)");
        }
        println!("best: {}", ember_gpu::Device::best());
    }
    #[cfg(not(feature = "gpu"))]
    println!("GPUs: not listed (this ember was built without the gpu feature)");
    println!("debug probes:");
    super::flash::list_probes().map_err(|e| anyhow!("{e:#}"))
}
