//! int8 kernel throughput per instruction-set level, next to the reference kernel, for typical layers:
//! `cargo run --release -p ember-cpu --example int8_bench [-- THREADS]` (THREADS: workers for the
//! second column, default 2; `--quick` for fewer repetitions; `--layer TEXT` and `--level NAME` keep
//! the layers whose name holds TEXT and that level only).
//!
//! GOP/s counts a multiply and an add per weight tap (`2 * outputs * taps * inputs per group`). Each
//! figure is the best of several timed batches (the least disturbed by other processes on a shared
//! machine), after a warm-up call that also checks the output is the reference's, byte for byte.

use std::time::{Duration, Instant};

use ember_core::ops::quant::conv::QuantConv2dParams;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::{In, Out};
use ember_core::{AlignedBuf, Kernels, OpKind, Parallel, Workspace};
use ember_cpu::{table, Isa, ThreadPool};
use ember_testkit::layer::quant_conv2d_params;

/// A layer to time.
struct Layer {
    name: &'static str,
    kind: OpKind,
    x_dims: Vec<usize>,
    w_dims: Vec<usize>,
    y_dims: Vec<usize>,
    /// Multiply-adds.
    macs: usize,
}

fn conv(name: &'static str, size: usize, ic: usize, oc: usize, k: usize, groups: usize) -> Layer {
    let pad = (k / 2) as u16;
    let p = QuantConv2dParams {
        x_zero_point: -5,
        y_zero_point: 3,
        ..quant_conv2d_params((1, 1), (1, 1), [pad; 4], groups as u16)
    };
    Layer {
        name,
        kind: OpKind::QuantConv2d(p),
        x_dims: vec![1, size, size, ic],
        w_dims: vec![oc, k, k, ic / groups],
        y_dims: vec![1, size, size, oc],
        macs: size * size * oc * k * k * (ic / groups),
    }
}

fn fully_connected(name: &'static str, rows: usize, inputs: usize, outputs: usize) -> Layer {
    Layer {
        name,
        kind: OpKind::QuantFullyConnected(QuantFullyConnectedParams {
            x_zero_point: -5,
            y_zero_point: 3,
            act_min: -128,
            act_max: 127,
            rounding: RequantRounding::Double,
        }),
        x_dims: vec![rows, inputs],
        w_dims: vec![outputs, inputs],
        y_dims: vec![rows, outputs],
        macs: rows * inputs * outputs,
    }
}

/// Pseudo-random bytes (a fixed linear congruential sequence).
fn bytes(n: usize, seed: u32) -> Vec<i8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 24) as i8
        })
        .collect()
}

/// Runs `layer` once with `kernels` and `ws` into `y`.
fn run(
    layer: &Layer,
    kernels: &Kernels,
    data: &Data,
    y: &mut [i8],
    ws: Option<&mut Workspace<'_>>,
) {
    let x = In {
        data: &data.x,
        dims: &layer.x_dims,
    };
    let w = In {
        data: &data.w,
        dims: &layer.w_dims,
    };
    let y = Out {
        data: y,
        dims: &layer.y_dims,
    };
    match &layer.kind {
        OpKind::QuantConv2d(p) => (kernels.quant_conv2d)(p, x, w, Some(&data.b), &data.rq, y, ws),
        OpKind::QuantFullyConnected(p) => {
            (kernels.quant_fully_connected)(p, x, w, Some(&data.b), &data.rq, y, ws)
        }
        _ => unreachable!("only int8 layers here"),
    }
}

struct Data {
    x: Vec<i8>,
    w: Vec<i8>,
    b: Vec<i32>,
    rq: Vec<i32>,
}

/// The best seconds per call of `f` over batches of about 20 ms each.
fn time(quick: bool, mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let mut calls = 0u32;
    while start.elapsed() < Duration::from_millis(20) || calls < 3 {
        f();
        calls += 1;
    }
    let batches = if quick { 5 } else { 15 };
    let per_call: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                f();
            }
            t.elapsed().as_secs_f64() / f64::from(calls)
        })
        .collect();
    per_call.into_iter().fold(f64::INFINITY, f64::min)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let threads: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(2);
    let option = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).cloned()
    };
    let (only_layer, only_level) = (option("--layer"), option("--level"));
    let pool = ThreadPool::new(threads).expect("worker threads");
    let layers = [
        conv("conv 1x1 40x40x48->48", 40, 48, 48, 1, 1),
        conv("conv 3x3 20x20x96->96", 20, 96, 96, 3, 1),
        conv("depthwise 3x3 40x40x48", 40, 48, 48, 3, 48),
        fully_connected("fc 1x1024->1024", 1, 1024, 1024),
        fully_connected("fc 16x1024->1024", 16, 1024, 1024),
    ];
    println!("int8 kernels, GOP/s (1 thread | {threads} threads); reference = ember-core's kernel");
    println!("{:<24} {:>9} {:>17}", "layer", "level", "GOP/s");
    let layers = layers.iter().filter(|l| {
        only_layer
            .as_ref()
            .is_none_or(|t| l.name.contains(t.as_str()))
    });
    for layer in layers {
        let oc = layer.w_dims[0];
        let data = Data {
            x: bytes(layer.x_dims.iter().product(), 1),
            w: bytes(layer.w_dims.iter().product(), 2),
            b: (0..oc as i32).map(|i| i * 37 - 500).collect(),
            rq: (0..oc as i32)
                .flat_map(|i| [(1 << 30) + i * 1_000_003, -8])
                .collect(),
        };
        let n_out: usize = layer.y_dims.iter().product();
        let mut want = vec![0i8; n_out];
        run(layer, &ember_core::REFERENCE, &data, &mut want, None);
        let reference = time(quick, || {
            let mut y = vec![0i8; n_out];
            run(layer, &ember_core::REFERENCE, &data, &mut y, None)
        });
        let gops = |secs: f64| 2.0 * layer.macs as f64 / secs / 1e9;
        println!(
            "{:<24} {:>9} {:>8.2}",
            layer.name,
            "reference",
            gops(reference)
        );
        let levels = Isa::supported().filter(|&i| i != Isa::Scalar);
        for isa in levels.filter(|i| only_level.as_ref().is_none_or(|l| l == i.name())) {
            let k = table(isa);
            let (rq_dims, b_dims) = ([oc, 2], [oc]);
            let inputs: Vec<&[usize]> = vec![&layer.x_dims, &layer.w_dims, &rq_dims, &b_dims];
            let mut column = Vec::new();
            for parallel in [None, Some(&pool as &dyn Parallel)] {
                let workers = parallel.map_or(1, |p| p.workers());
                let bytes = k
                    .scratch
                    .map_or(0, |s| s(&layer.kind, &inputs, &layer.y_dims, workers));
                let mut scratch = AlignedBuf::zeroed(bytes);
                let mut y = vec![0i8; n_out];
                let mut ws = Workspace::new(scratch.as_mut_bytes(), parallel);
                run(layer, k, &data, &mut y, Some(&mut ws));
                assert!(
                    y == want,
                    "{isa} differs from the reference on {}",
                    layer.name
                );
                column.push(gops(time(quick, || {
                    run(layer, k, &data, &mut y, Some(&mut ws))
                })));
            }
            println!(
                "{:<24} {:>9} {:>8.2} | {:>6.2}   ({:.1}x the reference)",
                "",
                isa.name(),
                column[0],
                column[1],
                column[0] / gops(reference)
            );
        }
    }
}
