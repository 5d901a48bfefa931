//! GFLOP/s of `ember-cpu`'s GEMM-based kernels (GEMM, convolutions, depthwise, transposed) at every
//! level this CPU runs, next to `ember-core`'s
//! reference kernels, on the layer shapes of PP-OCRv4's detection and recognition models.
//!
//! `cargo run --release -p ember-cpu --example gemm_bench [-- --threads N] [--only TEXT]` (`--only`:
//! the layers whose name contains TEXT).
//!
//! Fully connected layers stand for the GEMM (`x [M, K]` times `W [N, K]^T`, what a 1x1 convolution
//! runs); M = 1 is the GEMV. The clock printed first is measured with a chain of dependent integer adds
//! (one per cycle), for turning GFLOP/s into flops per cycle.

use std::fmt;
use std::time::{Duration, Instant};

use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::fully_connected::FullyConnectedParams;
use ember_core::ops::{In, Out};
use ember_core::{AlignedBuf, Kernels, OpKind, Parallel, Workspace};
use ember_cpu::{Isa, ThreadPool};
use ember_testkit::layer::{conv2d_params, conv_transpose2d_params};

/// A convolution's shape: input `[1, h, w, ic]`, `oc` outputs, `kernel x kernel`, `stride`.
#[derive(Clone, Copy)]
struct Window {
    h: usize,
    w: usize,
    ic: usize,
    oc: usize,
    kernel: usize,
    stride: usize,
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Window {
            h,
            w,
            ic,
            oc,
            kernel,
            stride,
        } = *self;
        write!(f, "{kernel}x{kernel}/{stride} {h}x{w}x{ic}->{oc}")
    }
}

/// A layer to time.
enum Layer {
    /// `M x K` times `[N, K]^T`.
    Gemm { m: usize, k: usize, n: usize },
    /// A convolution with same padding.
    Conv { window: Window, groups: usize },
    /// A transposed convolution, no padding.
    ConvTranspose(Window),
}

impl Layer {
    fn name(&self) -> String {
        match *self {
            Layer::Gemm { m, k, n } => format!("gemm M={m} K={k} N={n}"),
            Layer::Conv { window: c, groups } => {
                let kind = if groups > 1 { "dw" } else { "conv" };
                format!("{kind} {c}")
            }
            Layer::ConvTranspose(c) => format!("convT {c}"),
        }
    }
}

/// A 3x3 convolution over 80x80x16, timed as a full and as a depthwise convolution.
const W80X80X16_3X3: Window = Window {
    h: 80,
    w: 80,
    ic: 16,
    oc: 16,
    kernel: 3,
    stride: 1,
};

const LAYERS: &[Layer] = &[
    Layer::Gemm {
        m: 6400,
        k: 16,
        n: 32,
    },
    Layer::Gemm {
        m: 1600,
        k: 48,
        n: 48,
    },
    Layer::Gemm {
        m: 400,
        k: 96,
        n: 192,
    },
    Layer::Gemm {
        m: 240,
        k: 480,
        n: 120,
    },
    Layer::Gemm {
        m: 960,
        k: 240,
        n: 240,
    },
    Layer::Gemm {
        m: 240,
        k: 480,
        n: 480,
    },
    Layer::Gemm {
        m: 40,
        k: 120,
        n: 6625,
    },
    Layer::Gemm {
        m: 1,
        k: 1024,
        n: 1024,
    },
    Layer::Conv {
        window: W80X80X16_3X3,
        groups: 1,
    },
    Layer::Conv {
        window: Window {
            h: 160,
            w: 160,
            ic: 3,
            oc: 16,
            kernel: 3,
            stride: 2,
        },
        groups: 1,
    },
    Layer::Conv {
        window: Window {
            h: 40,
            w: 40,
            ic: 96,
            oc: 24,
            kernel: 3,
            stride: 1,
        },
        groups: 1,
    },
    Layer::Conv {
        window: W80X80X16_3X3,
        groups: 16,
    },
    Layer::Conv {
        window: Window {
            h: 12,
            w: 80,
            ic: 240,
            oc: 240,
            kernel: 5,
            stride: 1,
        },
        groups: 240,
    },
    Layer::ConvTranspose(Window {
        h: 40,
        w: 40,
        ic: 24,
        oc: 24,
        kernel: 2,
        stride: 2,
    }),
    Layer::ConvTranspose(Window {
        h: 80,
        w: 80,
        ic: 24,
        oc: 1,
        kernel: 2,
        stride: 2,
    }),
];

/// Cycles per second, from a chain of dependent adds.
#[cfg(target_arch = "x86_64")]
fn clock_hz() -> f64 {
    let n: u64 = 400_000_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let mut x = 0u64;
        // SAFETY: register arithmetic only.
        unsafe {
            std::arch::asm!(
                "2:",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "sub {n}, 8",
                "jnz 2b",
                x = inout(reg) x,
                n = inout(reg) n => _,
            );
        }
        std::hint::black_box(x);
        best = best.min(start.elapsed().as_secs_f64());
    }
    n as f64 / best
}

#[cfg(not(target_arch = "x86_64"))]
fn clock_hz() -> f64 {
    f64::NAN
}

/// Deterministic values in -1..1.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Best time of `f` over about 0.3 s.
fn time(mut f: impl FnMut()) -> Duration {
    f();
    let mut best = Duration::MAX;
    let start = Instant::now();
    let mut runs = 0;
    while runs < 3 || (start.elapsed() < Duration::from_millis(300) && runs < 10_000) {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed());
        runs += 1;
    }
    best
}

/// `data` with dims `dims`, as a kernel's input.
fn tensor<'a>(data: &'a [f32], dims: &'a [usize]) -> In<'a> {
    In { data, dims }
}

/// Best time in seconds of `call` with the scratch `kernels` asks for to run `kind` on tensors of
/// these dims (and `par`'s workers).
fn time_op(
    kernels: &Kernels,
    kind: &OpKind,
    (inputs, output): (&[&[usize]], &[usize]),
    par: Option<&dyn Parallel>,
    mut call: impl FnMut(Option<&mut Workspace<'_>>),
) -> f64 {
    let workers = par.map_or(1, |p| p.workers());
    let bytes = kernels
        .scratch
        .map_or(0, |f| f(kind, inputs, output, workers));
    let mut scratch = AlignedBuf::zeroed(bytes);
    time(|| call(Some(&mut Workspace::new(scratch.as_mut_bytes(), par)))).as_secs_f64()
}

/// Seconds per run of `layer` with `kernels` (and `pool`'s workers), and its flops.
fn run(layer: &Layer, kernels: &Kernels, pool: Option<&ThreadPool>) -> (f64, f64) {
    let par = pool.map(|p| p as &dyn Parallel);
    match *layer {
        Layer::Gemm { m, k, n } => {
            let (x, w, b) = (values(m * k, 1), values(n * k, 2), values(n, 3));
            let mut y = vec![0.0; m * n];
            let p = FullyConnectedParams {
                act: Activation::Relu,
            };
            let (xd, wd, yd) = ([m, k], [n, k], [m, n]);
            let kind = OpKind::FullyConnected(p);
            let t = time_op(kernels, &kind, (&[&xd, &wd, &[n]], &yd), par, |ws| {
                let (x, w) = (tensor(&x, &xd), tensor(&w, &wd));
                let y = Out {
                    data: &mut y,
                    dims: &yd,
                };
                (kernels.fully_connected)(&p, x, w, Some(&b), y, ws)
            });
            (t, 2.0 * (m * n * k) as f64)
        }
        Layer::Conv { window: c, groups } => {
            let pad = (c.kernel / 2) as u16;
            let s = c.stride as u16;
            let p = conv2d_params((s, s), (1, 1), [pad; 4], groups as u16, Activation::Relu6);
            let (oh, ow) = (c.h.div_ceil(c.stride), c.w.div_ceil(c.stride));
            let icg = c.ic / groups;
            let xd = [1, c.h, c.w, c.ic];
            let wd = [c.oc, c.kernel, c.kernel, icg];
            let yd = [1, oh, ow, c.oc];
            let (x, wt, b) = (
                values(xd.iter().product(), 4),
                values(wd.iter().product(), 5),
                values(c.oc, 6),
            );
            let mut y = vec![0.0; yd.iter().product()];
            let kind = OpKind::Conv2d(p);
            let t = time_op(kernels, &kind, (&[&xd, &wd, &[c.oc]], &yd), par, |ws| {
                let (x, w) = (tensor(&x, &xd), tensor(&wt, &wd));
                let y = Out {
                    data: &mut y,
                    dims: &yd,
                };
                (kernels.conv2d)(&p, x, w, Some(&b), y, ws)
            });
            (t, 2.0 * (oh * ow * c.oc * c.kernel * c.kernel * icg) as f64)
        }
        Layer::ConvTranspose(c) => {
            let s = c.stride as u16;
            let p = conv_transpose2d_params((s, s), (1, 1), [0; 4], (0, 0), 1, Activation::None);
            let (oh, ow) = (
                c.stride * (c.h - 1) + c.kernel,
                c.stride * (c.w - 1) + c.kernel,
            );
            let xd = [1, c.h, c.w, c.ic];
            let wd = [c.oc, c.kernel, c.kernel, c.ic];
            let yd = [1, oh, ow, c.oc];
            let (x, wt) = (
                values(xd.iter().product(), 7),
                values(wd.iter().product(), 8),
            );
            let mut y = vec![0.0; yd.iter().product()];
            let kind = OpKind::ConvTranspose2d(p);
            let t = time_op(kernels, &kind, (&[&xd, &wd], &yd), par, |ws| {
                let (x, w) = (tensor(&x, &xd), tensor(&wt, &wd));
                let y = Out {
                    data: &mut y,
                    dims: &yd,
                };
                (kernels.conv_transpose2d)(&p, x, w, None, y, ws)
            });
            (
                t,
                2.0 * (c.h * c.w * c.ic * c.oc * c.kernel * c.kernel) as f64,
            )
        }
    }
}

fn main() {
    let arg = |name: &str| std::env::args().skip_while(|a| a != name).nth(1);
    let threads = arg("--threads")
        .and_then(|t| t.parse().ok())
        .unwrap_or(1usize);
    let only = arg("--only").unwrap_or_default();
    let pool = (threads > 1).then(|| ThreadPool::new(threads).expect("worker threads"));
    let hz = clock_hz();
    println!(
        "clock {:.2} GHz (dependent adds); peak f32 at 2 FMA x 8 lanes: {:.1} GFLOP/s; {threads} thread(s)",
        hz / 1e9,
        32.0 * hz / 1e9
    );
    let levels: Vec<Isa> = Isa::supported().collect();
    print!("{:<34} {:>10}", "layer", "reference");
    for isa in &levels {
        print!(" {:>10}", isa.name());
    }
    println!("   GFLOP/s (flops/cycle of the best)");
    for layer in LAYERS.iter().filter(|l| l.name().contains(&only)) {
        print!("{:<34}", layer.name());
        let (t, flops) = run(layer, &ember_core::REFERENCE, None);
        print!(" {:>10.2}", flops / t / 1e9);
        let mut best = 0.0f64;
        for &isa in &levels {
            let (t, flops) = run(layer, ember_cpu::table(isa), pool.as_ref());
            best = best.max(flops / t);
            print!(" {:>10.2}", flops / t / 1e9);
        }
        println!("   ({:.1})", best / hz);
    }
}
