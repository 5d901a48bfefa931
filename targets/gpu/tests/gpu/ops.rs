//! Every f32 op on Vulkan against the CPU reference kernels (`Device::Cpu`), within 1e-4 relative, on
//! random shapes, parameters and values. Skips (printing why) without a Vulkan device unless
//! `EMBER_REQUIRE_GPU=1`.

use crate::common;

use common::{check_op, conv_geometry, conv_output, conv_window, pool_window, vulkan, Rng};
use ember_core::format::DType;
use ember_core::ops::array::concat::ConcatParams;
use ember_core::ops::array::gather::GatherParams;
use ember_core::ops::array::pad::PadParams;
use ember_core::ops::array::resize::{CoordMode, NearestMode, ResizeMode, ResizeParams};
use ember_core::ops::array::slice::SliceParams;
use ember_core::ops::array::transpose::TransposeParams;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::ops::nn::conv::{self, Conv2dParams};
use ember_core::ops::nn::conv_transpose::{self, ConvTranspose2dParams};
use ember_core::ops::nn::fully_connected::FullyConnectedParams;
use ember_core::ops::nn::layer_norm::LayerNormParams;
use ember_core::ops::nn::matmul::MatMulParams;
use ember_core::ops::nn::reduce::{ReduceOp, ReduceParams};
use ember_core::ops::nn::rms_norm::RmsNormParams;
use ember_core::ops::nn::softmax::SoftmaxParams;
use ember_core::ops::pool::max_pool;
use ember_core::OpKind;
use ember_testkit::layer::{conv2d_params, conv_transpose2d_params};
use ember_testkit::model::{input, single_op_blob, weight, Operand};
use ember_testkit::shape::numel;
use proptest::prelude::*;

const MAX_RANK: usize = 6;

fn random_dims(rng: &mut Rng, rank_lo: usize, rank_hi: usize, max: usize) -> Vec<usize> {
    (0..rng.int(rank_lo, rank_hi))
        .map(|_| rng.int(1, max))
        .collect()
}

fn activation(rng: &mut Rng) -> Activation {
    match rng.int(0, 3) {
        0 => Activation::None,
        1 => Activation::Relu,
        2 => Activation::Relu6,
        _ => Activation::Clip {
            min: rng.float(-1.0, 0.0),
            max: rng.float(0.5, 2.0),
        },
    }
}

/// Every unary op, each over a domain where it is defined.
#[test]
fn unary_ops() {
    let Some(gpu) = vulkan() else { return };
    use UnaryOp as U;
    let ops = [
        (U::Relu, -4.0, 4.0),
        (U::Relu6, -4.0, 8.0),
        (
            U::Clip {
                min: -0.5,
                max: 1.5,
            },
            -4.0,
            4.0,
        ),
        (U::Sigmoid, -8.0, 8.0),
        (U::Tanh, -5.0, 5.0),
        (U::Abs, -4.0, 4.0),
        (U::Neg, -4.0, 4.0),
        (U::Sqrt, 0.01, 10.0),
        (U::Exp, -5.0, 5.0),
        (U::Log, 0.01, 10.0),
        (U::Erf, -3.0, 3.0),
        (U::Gelu, -4.0, 4.0),
        (U::GeluTanh, -4.0, 4.0),
        (U::Floor, -4.0, 4.0),
        (U::Ceil, -4.0, 4.0),
        (U::Round, -4.0, 4.0),
        (U::Reciprocal, 0.1, 4.0),
        (U::LeakyRelu { alpha: 0.1 }, -4.0, 4.0),
        (
            U::HardSigmoid {
                alpha: 0.2,
                beta: 0.5,
            },
            -5.0,
            5.0,
        ),
        (U::HardSwish, -5.0, 5.0),
        (U::Elu { alpha: 1.5 }, -4.0, 4.0),
        (
            U::Selu {
                alpha: 1.67,
                gamma: 1.05,
            },
            -4.0,
            4.0,
        ),
        (U::Softplus, -6.0, 6.0),
        (U::Softsign, -4.0, 4.0),
        (U::Sign, -4.0, 4.0),
        (U::Sin, -3.0, 3.0),
        (U::Cos, -3.0, 3.0),
        (U::Tan, -1.2, 1.2),
        (U::Asin, -0.95, 0.95),
        (U::Acos, -0.95, 0.95),
        (U::Atan, -4.0, 4.0),
        (U::Sinh, -3.0, 3.0),
        (U::Cosh, -3.0, 3.0),
        (U::Asinh, -4.0, 4.0),
        (U::Acosh, 1.05, 5.0),
        (U::Atanh, -0.9, 0.9),
        (U::Celu { alpha: 0.8 }, -4.0, 4.0),
        (U::ThresholdedRelu { alpha: 0.5 }, -2.0, 2.0),
        (U::Mish, -4.0, 4.0),
        (
            U::Shrink {
                bias: 0.2,
                lambd: 0.5,
            },
            -2.0,
            2.0,
        ),
        (U::Swish { alpha: 1.2 }, -4.0, 4.0),
        (
            U::ScaledHardSwish {
                scale: 1.7,
                offset: -0.3,
            },
            -5.0,
            5.0,
        ),
    ];
    let mut rng = Rng::new(7);
    for (op, lo, hi) in ops {
        let dims = [3, 5, 7];
        let mut x = rng.floats(numel(&dims), lo, hi);
        // Exact halves and integers, where rounding and thresholds decide.
        for (i, v) in x.iter_mut().enumerate().take(20) {
            let half = (i as f32 - 10.0) * 0.5;
            if half >= lo && half <= hi {
                *v = half;
            }
        }
        check_op(
            gpu,
            OpKind::Unary(UnaryParams { op }),
            &[input(&dims, x)],
            &dims,
        );
    }
}

/// Broadcast `dims` at random: some axes become 1, some leading axes go.
fn broadcast_of(rng: &mut Rng, dims: &[usize]) -> Vec<usize> {
    let drop = rng.int(0, dims.len());
    dims[drop..]
        .iter()
        .map(|&d| if rng.bool() { 1 } else { d })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn binary_ops_broadcast(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let y = random_dims(&mut rng, 0, 4, 4);
        let (a, b) = if rng.bool() {
            (y.clone(), broadcast_of(&mut rng, &y))
        } else {
            (broadcast_of(&mut rng, &y), y.clone())
        };
        // The output is the broadcast of both: restore the full shape on one side.
        let out: Vec<usize> = {
            let rank = a.len().max(b.len());
            (0..rank)
                .map(|i| {
                    let da = a.len().checked_sub(rank - i).map_or(1, |j| a[j]);
                    let db = b.len().checked_sub(rank - i).map_or(1, |j| b[j]);
                    da.max(db)
                })
                .collect()
        };
        for op in [
            BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow,
            BinaryOp::Min, BinaryOp::Max, BinaryOp::PRelu, BinaryOp::Mod, BinaryOp::FloorMod,
        ] {
            let av = match op {
                BinaryOp::Pow => (0..numel(&a))
                    .map(|_| if rng.bool() { rng.float(0.1, 3.0) } else { rng.float(-3.0, 3.0) })
                    .collect(),
                _ => rng.floats(numel(&a), -5.0, 5.0),
            };
            let bv: Vec<f32> = match op {
                BinaryOp::Pow => (0..numel(&b))
                    .map(|_| if rng.bool() { rng.int(0, 6) as f32 - 3.0 } else { rng.float(-2.0, 2.0) })
                    .collect(),
                BinaryOp::Div | BinaryOp::Mod | BinaryOp::FloorMod => (0..numel(&b))
                    .map(|_| rng.float(0.5, 3.0) * if rng.bool() { 1.0 } else { -1.0 })
                    .collect(),
                _ => rng.floats(numel(&b), -5.0, 5.0),
            };
            let p = BinaryParams { op, act: activation(&mut rng) };
            check_op(gpu, OpKind::Binary(p), &[input(&a, av), input(&b, bv)], &out);
        }
    }

    #[test]
    fn conv2d_groups_and_depthwise(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let groups = rng.int(1, 3);
        let depthwise = rng.bool();
        let (group_ic, group_oc) = if depthwise { (1, 1) } else { (rng.int(1, 3), rng.int(1, 3)) };
        let g = conv_geometry(&mut rng);
        let (strides, dilations, pads) = conv_window(g);
        let p = conv2d_params(strides, dilations, pads, groups as u16, activation(&mut rng));
        let x = vec![rng.int(1, 2), rng.int(1, 7), rng.int(1, 7), groups * group_ic];
        let w = vec![groups * group_oc, rng.int(1, 3), rng.int(1, 3), group_ic];
        let y = conv_output(&x, &w, g);
        prop_assume!(y.is_some());
        let y = y.unwrap().to_vec();
        let bias = rng.bool();
        prop_assume!(conv::validate(&p, &x, &w, bias.then_some(&[w[0]][..]), &y).is_ok());
        let operands = layer_operands(&mut rng, &x, &w, bias);
        check_op(gpu, OpKind::Conv2d(p), &operands, &y);
    }

    /// Transposed convolutions with one group (strides, dilations, crops, output paddings, bias,
    /// activations) run as im2col + GEMM and match the CPU reference.
    #[test]
    fn conv_transpose2d(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let g = conv_geometry(&mut rng);
        let (strides, dilations, pads) = conv_window(g);
        // ONNX requires an output padding below the stride or the dilation.
        let mut out_pad = |s: u16, d: u16| rng.int(0, usize::from(s.max(d)) - 1) as u16;
        let output_pads = (out_pad(strides.0, dilations.0), out_pad(strides.1, dilations.1));
        let act = activation(&mut rng);
        let p = conv_transpose2d_params(strides, dilations, pads, output_pads, 1, act);
        let x = vec![rng.int(1, 2), rng.int(1, 5), rng.int(1, 5), rng.int(1, 4)];
        let w = vec![rng.int(1, 4), rng.int(1, 3), rng.int(1, 3), x[3]];
        let y = conv_transpose_output(&x, &w, &p);
        prop_assume!(y.is_some());
        let y = y.unwrap().to_vec();
        let bias = rng.bool();
        prop_assume!(
            conv_transpose::validate(&p, &x, &w, bias.then_some(&[w[0]][..]), &y).is_ok()
        );
        let operands = layer_operands(&mut rng, &x, &w, bias);
        check_op(gpu, OpKind::ConvTranspose2d(p), &operands, &y);
    }

    #[test]
    fn fully_connected_and_matmul(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let (rows, inf, outf) = (rng.int(1, 4), rng.int(1, 20), rng.int(1, 12));
        let mut operands = vec![
            input(&[rows, inf], rng.floats(rows * inf, -1.0, 1.0)),
            weight(&[outf, inf], rng.floats(outf * inf, -1.0, 1.0)),
        ];
        if rng.bool() {
            operands.push(weight(&[outf], rng.floats(outf, -1.0, 1.0)));
        }
        let p = FullyConnectedParams { act: activation(&mut rng) };
        check_op(gpu, OpKind::FullyConnected(p), &operands, &[rows, outf]);

        let (m, k, n) = (rng.int(1, 6), rng.int(1, 8), rng.int(1, 6));
        let batch = random_dims(&mut rng, 0, 2, 3);
        let ab = broadcast_of(&mut rng, &batch);
        let bb = broadcast_of(&mut rng, &batch);
        let full: Vec<usize> = {
            let rank = ab.len().max(bb.len());
            (0..rank)
                .map(|i| {
                    let da = ab.len().checked_sub(rank - i).map_or(1, |j| ab[j]);
                    let db = bb.len().checked_sub(rank - i).map_or(1, |j| bb[j]);
                    da.max(db)
                })
                .collect()
        };
        let a = [&ab[..], &[m, k]].concat();
        let b = [&bb[..], &[k, n]].concat();
        let y = [&full[..], &[m, n]].concat();
        check_op(
            gpu,
            OpKind::MatMul(MatMulParams {}),
            &[input(&a, rng.floats(numel(&a), -1.0, 1.0)), input(&b, rng.floats(numel(&b), -1.0, 1.0))],
            &y,
        );
    }

    #[test]
    fn softmax_layer_norm_reduce(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let x = random_dims(&mut rng, 1, 4, 5);
        let values = rng.floats(numel(&x), -4.0, 4.0);
        let axis = rng.int(0, x.len() - 1) as u8;
        let p = SoftmaxParams { axis };
        check_op(gpu, OpKind::Softmax(p), &[input(&x, values.clone())], &x);
        check_op(gpu, OpKind::LogSoftmax(p), &[input(&x, values.clone())], &x);

        let inner = x[axis as usize..].to_vec();
        let mut operands = vec![
            input(&x, values.clone()),
            weight(&inner, rng.floats(numel(&inner), -2.0, 2.0)),
        ];
        if rng.bool() {
            operands.push(weight(&inner, rng.floats(numel(&inner), -1.0, 1.0)));
        }
        let p = LayerNormParams { axis, epsilon: 1e-5 };
        check_op(gpu, OpKind::LayerNorm(p), &operands, &x);
        let p = RmsNormParams { axis, epsilon: 1e-5 };
        check_op(gpu, OpKind::RmsNorm(p), &operands[..2], &x);

        for op in [
            ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod,
            ReduceOp::L1, ReduceOp::L2, ReduceOp::LogSumExp, ReduceOp::SumSquare, ReduceOp::LogSum,
        ] {
            let axes = rng.int(1, (1 << x.len()) - 1) as u8;
            let keepdims = rng.bool();
            let y: Vec<usize> = x
                .iter()
                .enumerate()
                .filter_map(|(d, &n)| match axes & (1 << d) != 0 {
                    true if keepdims => Some(1),
                    true => None,
                    false => Some(n),
                })
                .collect();
            // LogSum needs positive sums; Prod stays tame near 1.
            let v = match op {
                ReduceOp::LogSum => rng.floats(numel(&x), 0.1, 2.0),
                ReduceOp::Prod => rng.floats(numel(&x), 0.5, 1.5),
                _ => values.clone(),
            };
            let p = ReduceParams { op, axes, keepdims };
            check_op(gpu, OpKind::Reduce(p), &[input(&x, v)], &y);
        }
    }

    #[test]
    fn pooling(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let x = vec![rng.int(1, 2), rng.int(1, 8), rng.int(1, 8), rng.int(1, 4)];
        let (kh, kw) = (rng.int(1, 3), rng.int(1, 3));
        let p = pool_window(&mut rng, (kh, kw));
        let ph = x[1] + (p.pad_top + p.pad_bottom) as usize;
        let pw = x[2] + (p.pad_left + p.pad_right) as usize;
        prop_assume!(ph >= kh && pw >= kw);
        let y = vec![x[0], (ph - kh) / p.stride_h as usize + 1, (pw - kw) / p.stride_w as usize + 1, x[3]];
        prop_assume!(max_pool::validate(&p, &x, &y).is_ok());
        let values = rng.floats(numel(&x), -3.0, 3.0);
        check_op(gpu, OpKind::MaxPool2d(p), &[input(&x, values.clone())], &y);
        check_op(gpu, OpKind::AvgPool2d(p), &[input(&x, values.clone())], &y);
        check_op(gpu, OpKind::GlobalAvgPool, &[input(&x, values)], &[x[0], 1, 1, x[3]]);
    }

    #[test]
    fn data_movement(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let x = random_dims(&mut rng, 1, 4, 4);
        let rank = x.len();
        let values = rng.floats(numel(&x), -3.0, 3.0);

        // Transpose.
        let mut perm: Vec<u8> = (0..rank as u8).collect();
        for i in (1..rank).rev() {
            perm.swap(i, rng.int(0, i));
        }
        let mut p = TransposeParams { perm: [0; MAX_RANK] };
        p.perm[..rank].copy_from_slice(&perm);
        let y: Vec<usize> = perm.iter().map(|&a| x[a as usize]).collect();
        check_op(gpu, OpKind::Transpose(p), &[input(&x, values.clone())], &y);

        // Pad.
        let mut p = PadParams { before: [0; MAX_RANK], after: [0; MAX_RANK], value: rng.float(-1.0, 1.0) };
        for i in 0..rank {
            p.before[i] = rng.int(0, 2) as u32;
            p.after[i] = rng.int(0, 2) as u32;
        }
        let y: Vec<usize> = (0..rank).map(|i| x[i] + (p.before[i] + p.after[i]) as usize).collect();
        check_op(gpu, OpKind::Pad(p), &[input(&x, values.clone())], &y);

        // Slice, with negative steps.
        let mut p = SliceParams { start: [0; MAX_RANK], step: [1; MAX_RANK] };
        let mut y = Vec::new();
        for (i, &d) in x.iter().enumerate() {
            let step = rng.pick(&[1i32, 2, -1, -2]);
            let start = rng.int(0, d - 1);
            let room = if step > 0 { d - 1 - start } else { start };
            let count = room / step.unsigned_abs() as usize + 1;
            p.start[i] = start as u32;
            p.step[i] = step;
            y.push(rng.int(1, count));
        }
        check_op(gpu, OpKind::Slice(p), &[input(&x, values.clone())], &y);

        // Concat of two or three inputs.
        let axis = rng.int(0, rank - 1);
        let parts: Vec<Vec<usize>> = (0..rng.int(2, 3))
            .map(|_| {
                let mut d = x.clone();
                d[axis] = rng.int(1, 3);
                d
            })
            .collect();
        let mut y = x.clone();
        y[axis] = parts.iter().map(|d| d[axis]).sum();
        let operands: Vec<_> = parts.iter().map(|d| input(d, rng.floats(numel(d), -1.0, 1.0))).collect();
        check_op(gpu, OpKind::Concat(ConcatParams { axis: axis as u8 }), &operands, &y);

        // Gather with fixed indices.
        let idx_dims = random_dims(&mut rng, 1, 2, 3);
        let indices: Vec<f32> = (0..numel(&idx_dims)).map(|_| rng.int(0, x[axis] - 1) as f32).collect();
        let y = [&x[..axis], &idx_dims[..], &x[axis + 1..]].concat();
        check_op(
            gpu,
            OpKind::Gather(GatherParams { axis: axis as u8 }),
            &[input(&x, values.clone()), weight(&idx_dims, indices)],
            &y,
        );

        // Broadcast (Expand) and Reshape.
        let small = broadcast_of(&mut rng, &x);
        check_op(gpu, OpKind::Broadcast, &[input(&small, rng.floats(numel(&small), -1.0, 1.0))], &x);
        check_op(gpu, OpKind::Reshape, &[input(&x, values.clone())], &[numel(&x)]);
    }

    #[test]
    fn resize(seed in any::<u64>()) {
        let Some(gpu) = vulkan() else { return Ok(()) };
        let mut rng = Rng::new(seed);
        let channels_last = rng.bool();
        let x = vec![rng.int(1, 2), rng.int(1, 5), rng.int(1, 5), rng.int(1, 3)];
        let h = if channels_last { 1 } else { 2 };
        let mut y = x.clone();
        y[h] = rng.int(1, 9);
        y[h + 1] = rng.int(1, 9);
        let mode = match rng.int(0, 6) {
            0 => ResizeMode::Linear,
            1 => ResizeMode::Nearest(NearestMode::RoundPreferFloor),
            2 => ResizeMode::Nearest(NearestMode::RoundPreferCeil),
            3 => ResizeMode::Nearest(NearestMode::Floor),
            4 => ResizeMode::Nearest(NearestMode::Ceil),
            5 => ResizeMode::Cubic {
                a: rng.pick(&[-0.75, -0.5]),
                exclude_outside: rng.bool(),
                antialias: rng.bool(),
            },
            _ => ResizeMode::LinearAntialias { exclude_outside: rng.bool() },
        };
        let coord = rng.pick(&[
            CoordMode::HalfPixel,
            CoordMode::PytorchHalfPixel,
            CoordMode::AlignCorners,
            CoordMode::Asymmetric,
            CoordMode::HalfPixelSymmetric,
        ]);
        let p = ResizeParams {
            mode,
            coord,
            scale_h: y[h] as f32 / x[h] as f32,
            scale_w: y[h + 1] as f32 / x[h + 1] as f32,
            channels_last,
        };
        check_op(gpu, OpKind::Resize(p), &[input(&x, rng.floats(numel(&x), -2.0, 2.0))], &y);
    }
}

/// A one-group convolution with a 3x3 window runs as im2col + GEMM (its scratch matrix shows in the
/// memory report), a 1x1 one direct; both match the CPU.
#[test]
fn conv2d_im2col_and_direct_paths() {
    let Some(gpu) = vulkan() else { return };
    let mut rng = Rng::new(7);
    for k in [3usize, 1] {
        let p = Conv2dParams {
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 1,
            pad_left: 1,
            pad_bottom: 1,
            pad_right: 1,
            groups: 1,
            act: Activation::Relu,
        };
        let x = [1, 6, 6, 4];
        let w = [5, k, k, 4];
        let side = 6 + 2 - k + 1;
        let y = [1, side, side, 5];
        let operands = [
            input(&x, rng.floats(numel(&x), -1.0, 1.0)),
            weight(&w, rng.floats(numel(&w), -1.0, 1.0)),
            weight(&[5], rng.floats(5, -1.0, 1.0)),
        ];
        check_op(gpu, OpKind::Conv2d(p), &operands, &y);
        let blob = single_op_blob(OpKind::Conv2d(p), &operands, &y, DType::F32);
        let session = ember_gpu::DeviceSession::new(blob.as_bytes(), gpu).unwrap();
        let ember_gpu::DeviceMemoryReport::Gpu(r) = session.memory_report() else {
            panic!("a GPU session reports GPU memory")
        };
        let output_bytes = 4 * numel(&y) as u64;
        let im2col_bytes = 4 * (side * side * k * k * 4) as u64;
        let want = if k > 1 {
            output_bytes + im2col_bytes
        } else {
            output_bytes
        };
        assert_eq!(r.activation_tensor_bytes, want, "k={k}: {r}");
    }
}

/// A layer's operands with values in [-1, 1]: input `x`, `[OC, ...]` weights `w`, and a bias of OC
/// values when `bias` (drawn in that order).
fn layer_operands(rng: &mut Rng, x: &[usize], w: &[usize], bias: bool) -> Vec<Operand> {
    let mut operands = vec![
        input(x, rng.floats(numel(x), -1.0, 1.0)),
        weight(w, rng.floats(numel(w), -1.0, 1.0)),
    ];
    if bias {
        operands.push(weight(&[w[0]], rng.floats(w[0], -1.0, 1.0)));
    }
    operands
}

/// The NHWC output dims of a transposed convolution of `x` by `[OC, KH, KW, IC]` weights `w`: each
/// side `stride * (in - 1) + dilation * (k - 1) + 1 + output_pad - crops`, or `None` where the crops
/// take more than the full output.
fn conv_transpose_output(
    x: &[usize],
    w: &[usize],
    p: &ConvTranspose2dParams,
) -> Option<[usize; 4]> {
    let side = |len: usize, k: usize, s: u16, d: u16, out_pad: u16, crop: usize| {
        (usize::from(s) * (len - 1) + usize::from(d) * (k - 1) + 1 + usize::from(out_pad))
            .checked_sub(crop)
            .filter(|&v| v > 0)
    };
    let (pt, pl, pb, pr) = (p.pad_top, p.pad_left, p.pad_bottom, p.pad_right);
    let h = side(
        x[1],
        w[1],
        p.stride_h,
        p.dilation_h,
        p.output_pad_h,
        usize::from(pt + pb),
    )?;
    let wd = side(
        x[2],
        w[2],
        p.stride_w,
        p.dilation_w,
        p.output_pad_w,
        usize::from(pl + pr),
    )?;
    Some([x[0], h, wd, w[0]])
}

/// A grouped transposed convolution (no GPU kernel yet) opens on the GPU anyway: it runs on the host
/// inside the session, which names it and says why, and gives the CPU reference's output.
#[test]
fn a_grouped_conv_transpose_runs_on_the_host_by_name() {
    let Some(gpu) = vulkan() else { return };
    let mut rng = Rng::new(3);
    let p = conv_transpose2d_params((2, 2), (1, 1), [0; 4], (0, 0), 2, Activation::None);
    let (x, w) = ([1, 3, 3, 4], [4, 2, 2, 2]);
    let y = conv_transpose_output(&x, &w, &p).expect("a 6x6 output");
    let operands = [
        input(&x, rng.floats(numel(&x), -1.0, 1.0)),
        weight(&w, rng.floats(numel(&w), -1.0, 1.0)),
    ];
    let blob = single_op_blob(OpKind::ConvTranspose2d(p), &operands, &y, DType::F32);
    let session = ember_gpu::DeviceSession::new(blob.as_bytes(), gpu).unwrap();
    let host = session.host_ops();
    assert_eq!(host.len(), 1, "{host:?}");
    assert!(
        host[0].1 == "ConvTranspose2d" && host[0].2.contains("2 groups"),
        "{host:?}"
    );
    check_op(gpu, OpKind::ConvTranspose2d(p), &operands, &y);
}
