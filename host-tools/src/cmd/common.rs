//! What the subcommands share: reading and parsing blobs, the host CPU and its arena, progress
//! display, `ember run`'s arguments (also `ember profile`'s, and the GPU path's in `device`) with the
//! binding, printing and comparing of its inputs and outputs, the parsing of shapes and
//! `[NAME=]FILE` arguments, and finding a Python with onnxruntime (`compare`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::npy;
use anyhow::{anyhow, bail, Context, Result};
use ember_core::{AlignedBuf, Model};

/// Reads a blob from disk into a 16-byte-aligned buffer.
pub fn read_blob(path: &Path) -> Result<AlignedBuf> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(AlignedBuf::from_bytes(&bytes))
}

/// Parses a blob, naming the file in the error.
pub fn parse<'b>(blob: &'b AlignedBuf, path: &Path) -> Result<Model<'b>> {
    Model::parse(blob.as_bytes()).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The host CPU for `run`, `bench`, `profile` and `demo`: `ember-cpu`'s kernels for this CPU's
/// instruction-set level (`EMBER_CPU_ISA` forces a lower one) with `threads` workers in all (0: one per
/// core).
pub fn host_cpu(threads: usize) -> Result<ember_cpu::Cpu> {
    ember_cpu::Cpu::new(threads).map_err(|e| anyhow::anyhow!("{e}"))
}

/// An arena for a session of `model` on `cpu`: the converter's plan plus the scratch its kernels ask for.
pub fn host_arena(cpu: &ember_cpu::Cpu, model: &Model<'_>) -> Result<AlignedBuf> {
    Ok(AlignedBuf::zeroed(cpu.arena_bytes(model)?))
}

/// How the CPU runs, for reports: `cpu-avx2, 1 thread`.
pub fn cpu_label(cpu: &ember_cpu::Cpu) -> String {
    let threads = cpu.threads();
    format!(
        "{}, {threads} thread{}",
        ember_cpu::table(cpu.isa()).name,
        if threads == 1 { "" } else { "s" }
    )
}

/// A spinner on stderr for steps that may take more than a second (hidden when stderr is not a terminal).
pub fn spinner(msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(100));
    pb
}

/// A progress bar over `n` steps.
pub fn progress(n: u64, msg: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new(n);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta})")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg.to_string());
    pb
}

/// Formats a shape as `[1, 3, 8, 8]`.
pub fn shape_str<T: std::fmt::Display>(dims: &[T]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Splits `NAME=value` into `(Some(NAME), value)`, or `(None, value)` when there is no `=`.
pub fn split_named(arg: &str) -> (Option<&str>, &str) {
    match arg.split_once('=') {
        Some((name, value)) if !name.is_empty() => (Some(name), value),
        _ => (None, arg),
    }
}

/// Parses a `--shape NAME=DIMS` argument (`input=1,3,224,224`) into the name and its dims, with the
/// converter's parser.
pub fn parse_shape(arg: &str) -> Result<(String, Vec<usize>)> {
    ember_convert::ConvertOptions::parse_shape(arg).map_err(anyhow::Error::msg)
}

// The arguments of `ember run` and `ember profile`, on the CPU (`run`) or a GPU (`device`). A plain
// comment, not a doc comment, so that clap's help text stays the subcommands' own.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The .ember blob.
    pub model: PathBuf,
    /// An input as x.npy (in graph-input order) or NAME=x.npy (repeatable), in the input's exact shape and
    /// its own element type (int8, uint8, int32, ..., float32); float32 into an int8 input is quantized with
    /// the input's scale and zero point. One per input of the model (a model without inputs needs none).
    #[arg(long = "input", value_name = "[NAME=]FILE")]
    pub inputs: Vec<String>,
    /// Expected output as y.npy or NAME=y.npy (repeatable), in the output's type (integers compared with
    /// --atol in units, e.g. --atol 1 for +-1 LSB) or float32 (an int8 output is dequantized first); a
    /// mismatch exits non-zero.
    #[arg(long = "expect", value_name = "[NAME=]FILE")]
    pub expects: Vec<String>,
    /// Absolute tolerance for --expect.
    #[arg(long, default_value_t = 1e-4)]
    pub atol: f32,
    /// Relative tolerance for --expect (times |expected|, added to atol).
    #[arg(long, default_value_t = 0.0)]
    pub rtol: f32,
    /// Write an output as y.npy or NAME=y.npy (repeatable).
    #[arg(long = "output", value_name = "[NAME=]FILE")]
    pub outputs: Vec<String>,
    /// Run this many times and report the median latency.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Print each op's time (median over the runs) and share of the total.
    #[arg(long)]
    pub profile: bool,
    /// Where to run: cpu (ember-cpu's kernels for this CPU; EMBER_CPU_ISA=scalar|sse2|avx2|avx512|neon|...
    /// forces a lower level), vulkan[:N], metal, cuda[:N] or best (GPUs need the `gpu` feature); a GPU
    /// run also prints the memory-pool report.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// CPU worker threads, the calling one included (0: one per core).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// Resolves `[NAME=]FILE` arguments against a list of graph tensors (`ids`): named ones by name, unnamed
/// ones in order. Returns `(position in ids, file)`.
pub fn bind<'a>(
    model: &Model<'_>,
    ids: &[u32],
    args: &'a [String],
    what: &str,
) -> Result<Vec<(usize, &'a str)>> {
    let names: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(k, &id)| {
            model
                .tensor_name(id as usize)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{what}{k}"))
        })
        .collect();
    bind_names(&names, args, what)
}

/// [`bind`] against a list of names: `[NAME=]FILE` arguments, named ones by name, unnamed ones in
/// order. Returns `(position in names, file)`.
pub fn bind_names<'a>(
    names: &[String],
    args: &'a [String],
    what: &str,
) -> Result<Vec<(usize, &'a str)>> {
    let mut next = 0;
    let mut bound = Vec::new();
    for arg in args {
        let (name, file) = split_named(arg);
        let pos = match name {
            Some(name) => names.iter().position(|n| n == name).ok_or_else(|| {
                anyhow!(
                    "the model has no {what} named {name:?}; its {what}s are: {}",
                    names.join(", ")
                )
            })?,
            None => {
                let p = next;
                next += 1;
                if p >= names.len() {
                    bail!(
                        "more {what} files than the model has {what}s ({}: {})",
                        names.len(),
                        names.join(", ")
                    );
                }
                p
            }
        };
        if bound.iter().any(|&(p, _)| p == pos) {
            bail!("{what} {:?} is given twice", names[pos]);
        }
        bound.push((pos, file));
    }
    Ok(bound)
}

/// For a model with shape variants, switches `session` to the variant that takes inputs of `shapes`
/// (one per graph input, in order): the one of exactly these shapes, else the smallest that covers
/// them where the model declares a pad value (`ember convert --pad`), and says so on stderr. The
/// error lists the variants there are. A model of one shape is left as it is (its own shape check
/// names what is wrong).
pub fn choose_variant<const E: u64>(
    session: &mut ember_core::Session<'_, E>,
    shapes: &[&[usize]],
) -> Result<ember_core::Fit> {
    let model = session.model().clone();
    if model.variant_count() < 2 {
        return Ok(ember_core::Fit {
            variant: 0,
            padded: false,
        });
    }
    let dims: Vec<Vec<u32>> = shapes
        .iter()
        .map(|s| {
            s.iter()
                .map(|&d| u32::try_from(d).unwrap_or(u32::MAX))
                .collect()
        })
        .collect();
    let dims: Vec<&[u32]> = dims.iter().map(Vec::as_slice).collect();
    if let Ok(fit) = session.set_input_shapes(&dims) {
        if fit.padded {
            eprintln!("{}", pad_note(session.model(), &model, shapes));
        }
        return Ok(fit);
    }
    let given: Vec<String> = shapes.iter().map(|s| shape_str(s)).collect();
    let pads: Vec<String> = (0..model.inputs().len())
        .filter_map(|k| {
            let value = model.pad_value(k)?;
            Some(format!(
                "{} with {value}",
                io_name(&model, model.inputs()[k], &format!("input{k}"))
            ))
        })
        .collect();
    let how = if pads.is_empty() {
        "no input may be padded (convert with --pad NAME=VALUE to allow it)".to_string()
    } else {
        format!("inputs padded to a larger variant: {}", pads.join(", "))
    };
    bail!(
        "no shape variant of the model takes inputs of shape {}; it has ({how}):\n{}",
        given.join(" and "),
        variant_lines(&model).join("\n")
    )
}

/// `padded input "input_ids" [1, 12] -> [1, 16] with 0, ...: variant S=16`: what a run in `variant`
/// of inputs of `shapes` pads (`model` is the blob's own view, which holds the names).
pub fn pad_note<const E: u64>(
    variant: &Model<'_, E>,
    model: &Model<'_, E>,
    shapes: &[&[usize]],
) -> String {
    let padded: Vec<String> = variant
        .inputs()
        .iter()
        .zip(shapes)
        .enumerate()
        .filter_map(|(k, (&id, given))| {
            let t = variant.tensor(id as usize)?;
            let want: Vec<usize> = t.dims.iter().map(|&d| d as usize).collect();
            (want != *given).then(|| {
                format!(
                    "{:?} {} -> {} with {}",
                    io_name(model, model.inputs()[k], &format!("input{k}")),
                    shape_str(given),
                    shape_str(&want),
                    model.pad_value(k).unwrap_or(0.0)
                )
            })
        })
        .collect();
    format!(
        "padded input {}: variant {}",
        padded.join(", "),
        variant_name(model, variant.variant_index())
    )
}

/// One line per shape variant: its named dims and its inputs' shapes.
pub fn variant_lines<const E: u64>(model: &Model<'_, E>) -> Vec<String> {
    (0..model.variant_count())
        .map(|i| {
            let inputs: Vec<String> = model.variant(i).map_or_else(
                |e| vec![e.to_string()],
                |v| {
                    v.inputs()
                        .iter()
                        .filter_map(|&id| v.tensor(id as usize))
                        .map(|t| shape_str(&t.dims))
                        .collect()
                },
            );
            format!("  {}: inputs {}", variant_name(model, i), inputs.join(", "))
        })
        .collect()
}

/// `W=160,H=48`: the named dims of variant `i`.
pub fn variant_name<const E: u64>(model: &Model<'_, E>, i: usize) -> String {
    model
        .variant_dims(i)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(k, v)| format!("{}={v}", model.dim_name(k).unwrap_or("?")))
        .collect::<Vec<_>>()
        .join(",")
}

/// The name of graph tensor `id`, or `fallback` when the blob has no names.
pub fn io_name<const E: u64>(model: &Model<'_, E>, id: u32, fallback: &str) -> String {
    model
        .tensor_name(id as usize)
        .map(str::to_string)
        .unwrap_or_else(|| fallback.to_string())
}

/// Result of comparing outputs with expectations.
pub struct Comparison {
    pub max_diff: f32,
    pub max_at: usize,
    pub mismatches: usize,
}

impl Comparison {
    /// Prints the `--expect` line of output `name` (`n` values) checked within `atol` + `rtol`, and
    /// returns whether every value matched.
    pub fn report(&self, name: &str, n: usize, atol: f32, rtol: f32) -> bool {
        println!(
            "expect {name:?}: max |diff| {:.3e} at index {}, {} of {} values outside atol {:e} + rtol {:e}: {}",
            self.max_diff,
            self.max_at,
            self.mismatches,
            n,
            atol,
            rtol,
            if self.mismatches == 0 { "ok" } else { "MISMATCH" }
        );
        self.mismatches == 0
    }
}

/// The exit of a command checked with `--expect`: success, or a failure said on stderr when an
/// output differed beyond the tolerance.
pub fn expect_exit(ok: bool) -> ExitCode {
    if ok {
        return ExitCode::SUCCESS;
    }
    eprintln!("error: outputs differ from the expected values beyond the tolerance");
    ExitCode::FAILURE
}

/// Compares element-wise: a value matches if `|got - want| <= atol + rtol * |want|`, or both are NaN, or
/// both are the same infinity.
pub fn compare(got: &[f32], want: &[f32], atol: f32, rtol: f32) -> Comparison {
    let mut c = Comparison {
        max_diff: 0.0,
        max_at: 0,
        mismatches: 0,
    };
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g == w;
        let diff = if same { 0.0 } else { (g - w).abs() };
        let diff = if diff.is_nan() { f32::INFINITY } else { diff };
        if diff > c.max_diff {
            c.max_diff = diff;
            c.max_at = i;
        }
        if diff > atol + rtol * w.abs() {
            c.mismatches += 1;
        }
    }
    c
}

/// [`compare`] on f64 values (integers exactly).
pub fn compare_f64(got: &[f64], want: &[f64], atol: f32, rtol: f32) -> Comparison {
    let (atol, rtol) = (f64::from(atol), f64::from(rtol));
    let mut c = Comparison {
        max_diff: 0.0,
        max_at: 0,
        mismatches: 0,
    };
    let mut max = 0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g == w;
        let diff = if same { 0.0 } else { (g - w).abs() };
        let diff = if diff.is_nan() { f64::INFINITY } else { diff };
        if diff > max {
            max = diff;
            c.max_at = i;
        }
        if diff > atol + rtol * w.abs() {
            c.mismatches += 1;
        }
    }
    c.max_diff = max as f32;
    c
}

/// Prints small outputs whole; for a 2-D output also the arg-max of each row.
pub fn print_values(values: &[f32], dims: &[u32]) {
    let shown: Vec<String> = values.iter().take(20).map(|v| format!("{v:.6}")).collect();
    let more = if values.len() > 20 {
        format!(" ... ({} values)", values.len())
    } else {
        String::new()
    };
    println!("  [{}]{more}", shown.join(", "));
    if dims.len() == 2 && dims[1] > 1 {
        let cols = dims[1] as usize;
        let top: Vec<String> = values
            .chunks(cols)
            .take(20)
            .map(|row| argmax(row).to_string())
            .collect();
        println!(
            "  argmax per row: [{}]{}",
            top.join(", "),
            if dims[0] > 20 { " ..." } else { "" }
        );
    }
}

/// Index of the largest value (the first on ties).
pub fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best
}

/// A Python that imports onnx, onnxruntime and numpy (`ember compare` runs onnxruntime through it):
/// `EMBER_PYTHON` when set, else the test venv `cargo xtask venv` makes (`venv/` in the build folder
/// beside this `ember`, or `target/venv` above it or above the current folder), else `python3` on
/// the PATH. The error lists what was tried and why each failed, and names the fix.
pub fn onnx_python() -> Result<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("EMBER_PYTHON") {
        candidates.push(PathBuf::from(p));
    } else {
        let venv_python = |dir: &Path| {
            if cfg!(windows) {
                dir.join("Scripts").join("python.exe")
            } else {
                dir.join("bin").join("python")
            }
        };
        let mut roots: Vec<PathBuf> = Vec::new();
        if let Ok(exe) = std::env::current_exe() {
            roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
        }
        if let Ok(cwd) = std::env::current_dir() {
            roots.extend(cwd.ancestors().map(Path::to_path_buf));
        }
        for root in roots {
            for venv in [root.join("venv"), root.join("target").join("venv")] {
                let py = venv_python(&venv);
                if py.is_file() && !candidates.contains(&py) {
                    candidates.push(py);
                }
            }
        }
        candidates.push(PathBuf::from(if cfg!(windows) {
            "python"
        } else {
            "python3"
        }));
    }
    let mut tried = Vec::new();
    for py in &candidates {
        let out = std::process::Command::new(py)
            .args(["-c", "import onnx, onnxruntime, numpy"])
            .output();
        let why = match out {
            Ok(o) if o.status.success() => return Ok(py.clone()),
            Ok(o) => String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("failed")
                .to_string(),
            Err(e) => e.to_string(),
        };
        tried.push(format!("{} ({why})", py.display()));
    }
    bail!(
        "no Python with onnx, onnxruntime and numpy to run the ONNX model with (tried {}): run \
         `cargo xtask venv` in the Ember repository (it makes target/venv), or set EMBER_PYTHON to a \
         Python that has them",
        tried.join("; ")
    )
}

/// The bytes to write into an input of `dtype`: the array's own if its type is the input's, or float32
/// values quantized with the input's scale and zero point (round half away from zero, saturating).
pub fn input_bytes(
    arr: npy::Typed,
    dtype: ember_core::DType,
    quant: Option<ember_core::format::QuantParams>,
) -> Result<Vec<u8>> {
    use ember_core::DType as E;
    if arr.dtype == dtype {
        return Ok(arr.bytes);
    }
    match (arr.dtype, dtype, quant) {
        (E::F32, E::I8, Some(q)) => Ok(npy::to_f64(E::F32, &arr.bytes)
            .iter()
            .map(|&x| {
                let v = (x / f64::from(q.scale)).round() + f64::from(q.zero_point);
                v.clamp(-128.0, 127.0) as i8 as u8
            })
            .collect()),
        // Integer ids into an integer input of another width (int32 token ids for an int64
        // input, ...): each value must fit.
        (have, want, _) if is_int(have) && is_int(want) => {
            let width = want.size();
            let mut out = Vec::with_capacity(arr.bytes.len() / have.size() * width);
            for v in npy::to_f64(have, &arr.bytes) {
                let fits = v.fract() == 0.0 && int_range(want).contains(&v);
                if !fits {
                    bail!("holds {v}, which the {} input cannot hold", want.name());
                }
                out.extend_from_slice(&(v as i64).to_le_bytes()[..width]);
            }
            Ok(out)
        }
        (have, want, _) => bail!(
            "holds {} values; the input is {}{}",
            have.name(),
            want.name(),
            if want == E::I8 {
                " without a scale to quantize float32 with: pass int8 values"
            } else {
                ""
            }
        ),
    }
}

fn is_int(dtype: ember_core::DType) -> bool {
    use ember_core::DType as E;
    matches!(
        dtype,
        E::I8 | E::U8 | E::I16 | E::U16 | E::I32 | E::U32 | E::I64 | E::U64
    )
}

/// The values an integer dtype holds, as f64 bounds.
fn int_range(dtype: ember_core::DType) -> std::ops::RangeInclusive<f64> {
    use ember_core::DType as E;
    match dtype {
        E::I8 => -128.0..=127.0,
        E::U8 => 0.0..=255.0,
        E::I16 => -32768.0..=32767.0,
        E::U16 => 0.0..=65535.0,
        E::I32 => -2147483648.0..=2147483647.0,
        E::U32 => 0.0..=4294967295.0,
        E::U64 => 0.0..=18446744073709551615.0,
        _ => -9223372036854775808.0..=9223372036854775807.0,
    }
}
