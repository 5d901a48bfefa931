//! Times `ember-cpu`'s element-wise, activation, normalization, pooling and data-movement kernels
//! against `ember-core`'s reference kernels, on the shapes of the PP-OCRv4 detection and recognition
//! models, one thread: nanoseconds per output element and GB/s (bytes read and written once each), for
//! the reference and each level this CPU runs.
//!
//! `cargo run --release -p ember-cpu --example elementwise_bench [-- NAME_FILTER]`

use std::hint::black_box;
use std::time::Instant;

use ember_core::ops::array::concat::ConcatParams;
use ember_core::ops::array::resize::{CoordMode, NearestMode, ResizeMode, ResizeParams};
use ember_core::ops::array::transpose::TransposeParams;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::ops::nn::layer_norm::LayerNormParams;
use ember_core::ops::nn::reduce::{ReduceOp, ReduceParams};
use ember_core::ops::nn::softmax::SoftmaxParams;
use ember_core::ops::pool::Pool2dParams;
use ember_core::ops::{In, Out};
use ember_core::Kernels;
use ember_cpu::{table, Isa};

/// How a case calls a table's kernel on its inputs and output.
type Call = Box<dyn Fn(&Kernels, &[In<'_>], Out<'_>)>;

/// One benchmark: inputs, the output shape, and how to call a table's kernel on them.
struct Case {
    name: String,
    inputs: Vec<(Vec<f32>, Vec<usize>)>,
    out_dims: Vec<usize>,
    call: Call,
}

impl Case {
    fn new(
        name: impl Into<String>,
        inputs: &[&[usize]],
        out_dims: &[usize],
        call: impl Fn(&Kernels, &[In<'_>], Out<'_>) + 'static,
    ) -> Case {
        // Values in [-4, 4) from a fixed LCG: no NaN, no denormals, varied signs.
        let mut state = 0x2545_f491_u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32 * 8.0 - 4.0
        };
        let inputs = inputs
            .iter()
            .map(|d| {
                (
                    (0..d.iter().product()).map(|_| next()).collect(),
                    d.to_vec(),
                )
            })
            .collect();
        Case {
            name: name.into(),
            inputs,
            out_dims: out_dims.to_vec(),
            call: Box::new(call),
        }
    }

    /// Bytes moved by one call: every input read once, the output written once.
    fn bytes(&self) -> usize {
        4 * (self.inputs.iter().map(|(d, _)| d.len()).sum::<usize>() + self.elements())
    }

    fn elements(&self) -> usize {
        self.out_dims.iter().product()
    }

    /// Seconds per call of `k`'s kernel: the best mean over 25 batches of ~4 ms each (the best, so
    /// that other processes on the machine disturb it as little as they can).
    fn time(&self, k: &Kernels) -> f64 {
        let ins: Vec<In<'_>> = self
            .inputs
            .iter()
            .map(|(data, dims)| In { data, dims })
            .collect();
        let mut out = vec![0.0f32; self.elements()];
        let mut run = || {
            (self.call)(
                k,
                black_box(&ins),
                Out {
                    data: &mut out,
                    dims: &self.out_dims,
                },
            );
            black_box(&out);
        };
        let start = Instant::now();
        run();
        let once = start.elapsed().as_secs_f64().max(1e-7);
        let reps = ((0.004 / once) as usize).clamp(1, 100_000);
        (0..25)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..reps {
                    run();
                }
                start.elapsed().as_secs_f64() / reps as f64
            })
            .fold(f64::INFINITY, f64::min)
    }
}

fn binary(op: BinaryOp, act: Activation, a: &[usize], b: &[usize], y: &[usize]) -> Case {
    let name = format!(
        "{}{} {a:?} {b:?}",
        op.name(),
        if act == Activation::None { "" } else { "+act" }
    );
    let p = BinaryParams { op, act };
    Case::new(name, &[a, b], y, move |k, i, o| {
        (k.binary)(&p, i[0], i[1], o)
    })
}

fn unary(op: UnaryOp, dims: &[usize]) -> Case {
    let p = UnaryParams { op };
    Case::new(
        format!("{} {dims:?}", op.name()),
        &[dims],
        dims,
        move |k, i, o| (k.unary)(&p, i[0], o),
    )
}

fn cases() -> Vec<Case> {
    use BinaryOp::*;
    let none = Activation::None;
    let det = [1, 80, 80, 32];
    let rec = [1, 12, 80, 240];
    let one = [1, 1, 1, 1];
    let mut cases = vec![
        binary(Mul, none, &one, &det, &det),
        binary(Add, none, &det, &one, &det),
        binary(
            Add,
            Activation::Clip { min: 0.0, max: 6.0 },
            &det,
            &one,
            &det,
        ),
        binary(Mul, none, &det, &det, &det),
        binary(Div, none, &det, &one, &det),
        binary(Add, none, &det, &[32], &det),
        binary(Mul, none, &rec, &rec, &rec),
        binary(Div, none, &rec, &one, &rec),
        binary(Add, none, &[1, 40, 120], &[120], &[1, 40, 120]),
        binary(Div, none, &[1, 40, 120], &[1, 40, 1], &[1, 40, 120]),
        binary(Sub, none, &[1, 40, 120], &[1, 40, 1], &[1, 40, 120]),
        binary(
            Mul,
            none,
            &[1, 40, 40, 48],
            &[1, 1, 1, 48],
            &[1, 40, 40, 48],
        ),
        binary(Max, none, &det, &det, &det),
    ];
    for op in [
        UnaryOp::Relu,
        UnaryOp::HardSwish,
        UnaryOp::HardSigmoid {
            alpha: 0.2,
            beta: 0.5,
        },
        UnaryOp::Sigmoid,
        UnaryOp::Swish { alpha: 1.0 },
        UnaryOp::Tanh,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Erf,
        UnaryOp::Gelu,
        UnaryOp::Sqrt,
    ] {
        cases.push(unary(op, &det));
    }
    cases.push(unary(UnaryOp::Sigmoid, &[1, 40, 240]));
    for (dims, axis) in [
        (vec![1, 40, 6625], 2u8),
        (vec![1, 8, 40, 40], 3),
        (vec![1, 64, 40, 40], 1),
    ] {
        let p = SoftmaxParams { axis };
        cases.push(Case::new(
            format!("Softmax {dims:?} axis {axis}"),
            &[&dims],
            &dims,
            move |k, i, o| (k.softmax)(&p, i[0], o),
        ));
    }
    let p = SoftmaxParams { axis: 2 };
    cases.push(Case::new(
        "LogSoftmax [1, 40, 6625] axis 2",
        &[&[1, 40, 6625]],
        &[1, 40, 6625],
        move |k, i, o| (k.log_softmax)(&p, i[0], o),
    ));
    let p = LayerNormParams {
        axis: 2,
        epsilon: 1e-5,
    };
    // Rows of a transformer's width, an instance norm's flattened rows, rows shorter than a vector,
    // and rows on either side of the short-row threshold of the kernel.
    for (rows, len, name) in [
        (40, 120, "LayerNorm [1, 40, 120]"),
        (8, 30, "LayerNorm [1, 8, 30]"),
        (40, 6, "LayerNorm [1, 40, 6]"),
        (20, 48, "LayerNorm [1, 20, 48]"),
    ] {
        cases.push(Case::new(
            name,
            &[&[1, rows, len], &[len], &[len]],
            &[1, rows, len],
            move |k, i, o| (k.layer_norm)(&p, i[0], i[1], Some(i[2].data), o),
        ));
    }
    for (op, axes, dims, out) in [
        (ReduceOp::Mean, 0b100u8, vec![1, 40, 120], vec![1, 40, 1]),
        (ReduceOp::Mean, 0b010, vec![1, 40, 120], vec![1, 1, 120]),
        (
            ReduceOp::Sum,
            0b0110,
            vec![1, 40, 40, 96],
            vec![1, 1, 1, 96],
        ),
        (ReduceOp::Max, 0b100, vec![1, 40, 6625], vec![1, 40, 1]),
    ] {
        let p = ReduceParams {
            op,
            axes,
            keepdims: true,
        };
        cases.push(Case::new(
            format!("Reduce{op:?} {dims:?} axes {axes:#b}"),
            &[&dims],
            &out,
            move |k, i, o| (k.reduce)(&p, i[0], o),
        ));
    }
    let window = |k: u16, s: u16, pad: u16| Pool2dParams {
        kernel_h: k,
        kernel_w: k,
        stride_h: s,
        stride_w: s,
        pad_top: pad,
        pad_left: pad,
        pad_bottom: pad,
        pad_right: pad,
        count_include_pad: false,
    };
    let p = window(3, 2, 1);
    cases.push(Case::new(
        "MaxPool 3x3/2 [1, 80, 80, 32]",
        &[&det],
        &[1, 40, 40, 32],
        move |k, i, o| (k.max_pool)(&p, i[0], o),
    ));
    let p = window(2, 2, 0);
    cases.push(Case::new(
        "AvgPool 2x2/2 [1, 12, 80, 240]",
        &[&rec],
        &[1, 6, 40, 240],
        move |k, i, o| (k.avg_pool)(&p, i[0], o),
    ));
    for dims in [[1, 40, 40, 48], [1, 10, 10, 480]] {
        cases.push(Case::new(
            format!("GlobalAvgPool {dims:?}"),
            &[&dims],
            &[1, 1, 1, dims[3]],
            |k, i, o| (k.global_avg_pool)(i[0], o),
        ));
    }
    for (dims, perm) in [
        (vec![1, 3, 160, 160], vec![0, 2, 3, 1]),
        (vec![1, 160, 160, 3], vec![0, 3, 1, 2]),
        (vec![1, 120, 40], vec![0, 2, 1]),
        (vec![1, 40, 3, 8, 15], vec![2, 0, 3, 1, 4]),
        (vec![1, 80, 80, 32], vec![0, 3, 1, 2]),
    ] {
        let mut p = TransposeParams { perm: [0; 6] };
        for (d, &a) in perm.iter().enumerate() {
            p.perm[d] = a;
        }
        let out: Vec<usize> = perm.iter().map(|&a| dims[usize::from(a)]).collect();
        cases.push(Case::new(
            format!("Transpose {dims:?} {perm:?}"),
            &[&dims],
            &out,
            move |k, i, o| (k.transpose)(&p, i[0], o),
        ));
    }
    let p = ConcatParams { axis: 3 };
    cases.push(Case::new(
        "Concat 4x[1, 40, 40, 24] axis 3",
        &[&[1usize, 40, 40, 24][..]; 4],
        &[1, 40, 40, 96],
        move |k, i, o| (k.concat)(&p, i, o),
    ));
    for mode in [ResizeMode::Nearest(NearestMode::Floor), ResizeMode::Linear] {
        let p = ResizeParams {
            mode,
            coord: CoordMode::HalfPixel,
            scale_h: 2.0,
            scale_w: 2.0,
            channels_last: true,
        };
        cases.push(Case::new(
            format!("Resize {mode:?} x2 [1, 40, 40, 96]"),
            &[&[1, 40, 40, 96]],
            &[1, 80, 80, 96],
            move |k, i, o| (k.resize)(&p, i[0], o),
        ));
    }
    cases
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let levels: Vec<Isa> = Isa::supported().collect();
    print!("{:<46} {:>9}  {:>16}", "case", "elements", "reference");
    for isa in &levels {
        print!("  {:>16}", isa.name());
    }
    println!("  {:>8}", "speedup");
    println!("{:<46} {:>9}  {:>16}", "", "", "ns/elem   GB/s");
    for case in cases().iter().filter(|c| c.name.contains(&filter)) {
        let (n, bytes) = (case.elements() as f64, case.bytes() as f64);
        let cell = |t: f64| format!("{:>7.3} {:>7.2}", t * 1e9 / n, bytes / t / 1e9);
        let reference = case.time(&ember_core::REFERENCE);
        print!(
            "{:<46} {:>9}  {}",
            case.name,
            case.elements(),
            cell(reference)
        );
        let mut best = f64::INFINITY;
        for &isa in &levels {
            let t = case.time(table(isa));
            best = best.min(t);
            print!("  {}", cell(t));
        }
        println!("  {:>7.1}x", reference / best);
    }
}
