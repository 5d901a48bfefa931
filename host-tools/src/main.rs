//! `ember`: the command-line face of Ember. Converts models to `.ember` blobs, inspects them, runs them on
//! the host CPU against expected outputs, and demonstrates the whole path on the bundled digits model.

mod cmd;
mod defmt_log;
mod emit;
mod npy;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ember",
    version,
    about = "Ember: convert, inspect and run models for MCUs and edge devices"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert an ONNX or TFLite model (or a checkpoint with its graph) into an .ember blob.
    Convert(cmd::convert::Args),
    /// Show a blob's ops, tensors, shapes and memory plan.
    Inspect {
        /// The .ember blob, or an .onnx model (converted in memory first).
        model: PathBuf,
        /// Convert the .onnx model in memory and show what each graph pass changed, then the blob.
        #[arg(long)]
        passes: bool,
        /// For an .onnx model: fix an input's dynamic dimensions, as NAME=1,3,48,192 (repeatable).
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// Draw the activation arena over time (op index by offset, a rectangle per tensor) into an SVG.
        #[arg(long, value_name = "SVG", conflicts_with = "passes")]
        plot: Option<PathBuf>,
        /// Also open the blob on this device (vulkan, cuda, metal, best; `gpu` feature) and say which
        /// ops run on it and which on the host inside the session, and why.
        #[arg(long, value_name = "DEVICE", conflicts_with = "passes")]
        device: Option<String>,
        /// For an .onnx model: bind a checkpoint (and merge a LoRA adapter) first, and show what
        /// bound to what.
        #[command(flatten)]
        weights: cmd::weights::WeightArgs,
    },
    /// Run a blob on the host CPU (or a GPU with --device), optionally checking the outputs.
    Run(cmd::common::RunArgs),
    /// `run --profile`: per-op times (GPU timestamps on a GPU) and the memory report.
    Profile(cmd::common::RunArgs),
    /// Compare every layer of a model with onnxruntime's values: errors, cosine, int8 steps.
    Compare(cmd::compare::Args),
    /// Measure latency and memory of a model on the host CPU.
    Bench(cmd::bench::Args),
    /// Flash firmware onto a board through a debug probe (or check it with --dry-run).
    Flash(cmd::flash::Args),
    /// Run firmware under QEMU and print its log (defmt decoded), as `ember flash` does from a board.
    Qemu(cmd::qemu::Args),
    /// List attached debug probes.
    Probes,
    /// List GPUs (through Vulkan: name, type, API version, memory heaps) and attached debug probes.
    Devices,
    /// Convert the bundled digits CNN, run it on the held-out images, and report accuracy, memory, latency.
    Demo(cmd::demo::Args),
}

/// The system allocator, counted: `ember bench` reports the heap allocations of the runs it times.
#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(args) => cmd::convert::run(&args),
        Command::Inspect {
            model,
            passes: true,
            shapes,
            weights,
            ..
        } => cmd::inspect::run_passes(&model, &shapes, &weights),
        Command::Inspect {
            model,
            shapes,
            plot,
            device,
            weights,
            ..
        } => cmd::inspect::run(
            &model,
            &shapes,
            plot.as_deref(),
            device.as_deref(),
            &weights,
        ),
        Command::Run(args) => cmd::run::run(&args),
        Command::Profile(mut args) => {
            args.profile = true;
            cmd::run::run(&args)
        }
        Command::Compare(args) => cmd::compare::run(&args),
        Command::Bench(args) => cmd::bench::run(&args),
        Command::Demo(args) => cmd::demo::run(&args),
        Command::Flash(args) => cmd::flash::run(&args),
        Command::Qemu(args) => cmd::qemu::run(&args),
        Command::Probes => cmd::flash::list_probes(),
        Command::Devices => cmd::device::list(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One readable paragraph: the error and its causes, no backtrace.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
