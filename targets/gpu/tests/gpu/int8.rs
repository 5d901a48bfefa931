//! Every int8 op on Vulkan against the CPU reference kernels, bit for bit: random shapes, zero points,
//! clamps, per-channel and per-tensor requantization rows, and both rounding modes; then the int8
//! digits model (onnxruntime's `quantize_static` model, converted by Ember) on all 360 test images.
//! Skips (printing why) without a Vulkan device unless `EMBER_REQUIRE_GPU=1`.

use crate::common;

use common::{conv_geometry, conv_output, conv_window, pool_window, run_both, vulkan, Rng};
use ember_core::format::DType;
use ember_core::ops::quant::add::QuantAddParams;
use ember_core::ops::quant::avg_pool::QuantAvgPoolParams;
use ember_core::ops::quant::conv::{self, QuantConv2dParams};
use ember_core::ops::quant::dequantize::DequantizeParams;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
use ember_core::ops::quant::max_pool::QuantMaxPoolParams;
use ember_core::ops::quant::mul::QuantMulParams;
use ember_core::ops::quant::quantize::{QuantizeParams, Rounding};
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::quant::requantize::RequantizeParams;
use ember_core::ops::quant::softmax::QuantSoftmaxParams;
use ember_core::{AlignedBuf, OpKind};
use ember_gpu::{Device, DeviceSession};
use ember_testkit::layer::quant_conv2d_params;
use ember_testkit::model::{typed_input, weight_i32, weight_i8, Operand};
use ember_tests::{model_dir, read_npy_f32};

/// Random cases per op.
const CASES: u64 = 40;

/// Runs the op on the CPU reference and on `gpu`; the outputs must be the same values exactly. Returns
/// how many distinct values the output has (so a test can tell that its cases are not all clamped).
fn check(
    gpu: Device,
    kind: OpKind,
    operands: &[Operand],
    out_dims: &[usize],
    out_dtype: DType,
) -> usize {
    let (got, cpu) = run_both(gpu, kind, operands, out_dims, out_dtype);
    assert_eq!(got.len(), cpu.len());
    for (i, (g, c)) in got.iter().zip(&cpu).enumerate() {
        assert!(
            g.to_bits() == c.to_bits(),
            "{kind:?}: element {i}: GPU {g}, CPU reference {c} (operands {:?})",
            operands.iter().map(|o| &o.dims).collect::<Vec<_>>()
        );
    }
    let mut distinct: Vec<u32> = cpu.iter().map(|v| v.to_bits()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    distinct.len()
}

/// Fails unless most cases produced varied outputs (at least 3 distinct values), so that the
/// comparison is not between two saturated outputs.
fn assert_varied(what: &str, varied: usize, cases: usize) {
    eprintln!(
        "{what}: {cases} cases bit-identical, {varied} with 3 or more distinct output values"
    );
    assert!(
        2 * varied > cases,
        "{what}: only {varied} of {cases} cases vary"
    );
}

fn i8s(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.int(0, 255) as f32 - 128.0).collect()
}

fn weights_i8(rng: &mut Rng, n: usize) -> Vec<i8> {
    (0..n)
        .map(|_| (rng.int(0, 254) as i32 - 127) as i8)
        .collect()
}

fn zero_point(rng: &mut Rng) -> i8 {
    (rng.int(0, 255) as i32 - 128) as i8
}

/// A clamp inside int8, lower bound first (sometimes the full range).
fn clamp(rng: &mut Rng) -> (i8, i8) {
    if rng.bool() {
        return (i8::MIN, i8::MAX);
    }
    let (a, b) = (zero_point(rng), zero_point(rng));
    (a.min(b), a.max(b))
}

fn rounding(rng: &mut Rng) -> RequantRounding {
    if rng.bool() {
        RequantRounding::Single
    } else {
        RequantRounding::Double
    }
}

/// `(multiplier, shift)` rows for `channels` output channels (or one per-tensor row): multipliers in
/// `[2^30, 2^31)`, shifts that bring accumulators of this size back to int8 range (and a few beyond).
fn requant_rows(rng: &mut Rng, channels: usize, taps: usize) -> Vec<i32> {
    let rows = if rng.bool() { channels } else { 1 };
    let bits = (taps.max(1) as f64 * 128.0 * 128.0).log2().ceil() as i32;
    (0..rows)
        .flat_map(|_| {
            let m = (1 << 30) + rng.int(0, (1 << 30) - 1) as i32;
            let shift = -(bits - 8) + rng.int(0, 4) as i32 - 2;
            [m, shift.clamp(-31, 30)]
        })
        .collect()
}

#[test]
fn int8_conv2d_and_depthwise_match_bit_for_bit() {
    let Some(gpu) = vulkan() else { return };
    let (mut varied, mut cases) = (0usize, 0usize);
    let mut rng = Rng::new(1);
    let mut ran = 0;
    while ran < CASES {
        let groups = rng.int(1, 3);
        let depthwise = rng.bool();
        let (group_ic, group_oc) = if depthwise {
            (1, rng.int(1, 2))
        } else {
            (rng.int(1, 4), rng.int(1, 3))
        };
        let (act_min, act_max) = clamp(&mut rng);
        let g = conv_geometry(&mut rng);
        let (strides, dilations, pads) = conv_window(g);
        let p = QuantConv2dParams {
            x_zero_point: zero_point(&mut rng),
            y_zero_point: zero_point(&mut rng),
            act_min,
            act_max,
            rounding: rounding(&mut rng),
            ..quant_conv2d_params(strides, dilations, pads, groups as u16)
        };
        let x = [
            rng.int(1, 2),
            rng.int(1, 7),
            rng.int(1, 7),
            groups * group_ic,
        ];
        let w = [groups * group_oc, rng.int(1, 3), rng.int(1, 3), group_ic];
        let Some(y) = conv_output(&x, &w, g) else {
            continue;
        };
        let taps = w[1] * w[2] * w[3];
        let rows = requant_rows(&mut rng, w[0], taps);
        let bias = rng.bool();
        let b_dims = [w[0]];
        if conv::validate(
            &p,
            &x,
            &w,
            bias.then_some(&b_dims[..]),
            &[rows.len() / 2, 2],
            &y,
        )
        .is_err()
        {
            continue;
        }
        let mut operands = vec![
            typed_input(&x, i8s(&mut rng, x.iter().product()), DType::I8),
            weight_i8(&w, weights_i8(&mut rng, w.iter().product())),
            weight_i32(&[rows.len() / 2, 2], rows),
        ];
        if bias {
            let b = (0..w[0])
                .map(|_| rng.int(0, 20_000) as i32 - 10_000)
                .collect();
            operands.push(weight_i32(&b_dims, b));
        }
        varied += usize::from(check(gpu, OpKind::QuantConv2d(p), &operands, &y, DType::I8) >= 3);
        cases += 1;
        ran += 1;
    }
    assert_varied("int8_conv2d_and_depthwise_match_bit_for_bit", varied, cases);
}

#[test]
fn int8_fully_connected_matches_bit_for_bit() {
    let Some(gpu) = vulkan() else { return };
    let (mut varied, mut cases) = (0usize, 0usize);
    let mut rng = Rng::new(2);
    for _ in 0..CASES {
        let (rows_x, inf, outf) = (rng.int(1, 3), rng.int(1, 70), rng.int(1, 12));
        let (act_min, act_max) = clamp(&mut rng);
        let p = QuantFullyConnectedParams {
            x_zero_point: zero_point(&mut rng),
            y_zero_point: zero_point(&mut rng),
            act_min,
            act_max,
            rounding: rounding(&mut rng),
        };
        let rows = requant_rows(&mut rng, outf, inf);
        let mut operands = vec![
            typed_input(&[rows_x, inf], i8s(&mut rng, rows_x * inf), DType::I8),
            weight_i8(&[outf, inf], weights_i8(&mut rng, outf * inf)),
            weight_i32(&[rows.len() / 2, 2], rows),
        ];
        if rng.bool() {
            let b = (0..outf)
                .map(|_| rng.int(0, 20_000) as i32 - 10_000)
                .collect();
            operands.push(weight_i32(&[outf], b));
        }
        varied += usize::from(
            check(
                gpu,
                OpKind::QuantFullyConnected(p),
                &operands,
                &[rows_x, outf],
                DType::I8,
            ) >= 3,
        );
        cases += 1;
    }
    assert_varied("int8_fully_connected_matches_bit_for_bit", varied, cases);
}

/// Two shapes that broadcast to the first: the second drops leading axes or has some set to 1.
fn broadcast_pair(rng: &mut Rng) -> (Vec<usize>, Vec<usize>) {
    let rank = rng.int(1, 4);
    let full: Vec<usize> = (0..rank).map(|_| rng.int(2, 5)).collect();
    let keep = rng.int(0, rank);
    let other: Vec<usize> = full[rank - keep..]
        .iter()
        .map(|&d| if rng.bool() { 1 } else { d })
        .collect();
    (full, other)
}

#[test]
fn int8_add_and_mul_match_bit_for_bit() {
    let Some(gpu) = vulkan() else { return };
    let (mut varied, mut cases) = (0usize, 0usize);
    let mut rng = Rng::new(3);
    for case in 0..2 * CASES {
        let (a, b) = broadcast_pair(&mut rng);
        let q = |rng: &mut Rng| (rng.float(0.01, 0.2), zero_point(rng));
        let (aq, bq) = (q(&mut rng), q(&mut rng));
        let (act_min, act_max) = clamp(&mut rng);
        let r = rounding(&mut rng);
        let kind = if case % 2 == 0 {
            let y = (aq.0.max(bq.0) * rng.float(0.5, 3.0), zero_point(&mut rng));
            let p = QuantAddParams::from_scales(aq, bq, y, act_min, act_max);
            OpKind::QuantAdd(QuantAddParams { rounding: r, ..p })
        } else {
            let y = (aq.0 * bq.0 * rng.float(20.0, 200.0), zero_point(&mut rng));
            let p = QuantMulParams::from_scales(aq, bq, y, act_min, act_max);
            OpKind::QuantMul(QuantMulParams { rounding: r, ..p })
        };
        let (a_values, b_values) = (
            i8s(&mut rng, a.iter().product()),
            i8s(&mut rng, b.iter().product()),
        );
        let operands = [
            typed_input(&a, a_values, DType::I8),
            typed_input(&b, b_values, DType::I8),
        ];
        varied += usize::from(check(gpu, kind, &operands, &a, DType::I8) >= 3);
        cases += 1;
    }
    assert_varied("int8_add_and_mul_match_bit_for_bit", varied, cases);
}

#[test]
fn int8_pooling_matches_bit_for_bit() {
    let Some(gpu) = vulkan() else { return };
    let (mut varied, mut cases) = (0usize, 0usize);
    let mut rng = Rng::new(4);
    for case in 0..2 * CASES {
        let (kh, kw) = (rng.int(1, 3), rng.int(1, 3));
        let window = pool_window(&mut rng, (kh, kw));
        let x = [rng.int(1, 2), rng.int(kh, 7), rng.int(kw, 7), rng.int(1, 5)];
        let out = |len: usize, k: usize, s: u16, a: u16, b: u16| {
            (len + usize::from(a + b) - k) / usize::from(s) + 1
        };
        let y = [
            x[0],
            out(x[1], kh, window.stride_h, window.pad_top, window.pad_bottom),
            out(x[2], kw, window.stride_w, window.pad_left, window.pad_right),
            x[3],
        ];
        let (act_min, act_max) = clamp(&mut rng);
        let kind = if case % 2 == 0 {
            OpKind::QuantMaxPool2d(QuantMaxPoolParams {
                window,
                act_min,
                act_max,
            })
        } else {
            OpKind::QuantAvgPool2d(QuantAvgPoolParams {
                window,
                zero_point: zero_point(&mut rng),
                act_min,
                act_max,
            })
        };
        let operands = [typed_input(
            &x,
            i8s(&mut rng, x.iter().product()),
            DType::I8,
        )];
        varied += usize::from(check(gpu, kind, &operands, &y, DType::I8) >= 3);
        cases += 1;
    }
    assert_varied("int8_pooling_matches_bit_for_bit", varied, cases);
}

#[test]
fn quantize_dequantize_requantize_match_bit_for_bit() {
    let Some(gpu) = vulkan() else { return };
    let (mut varied, mut cases) = (0usize, 0usize);
    let mut rng = Rng::new(5);
    for _ in 0..CASES {
        let n = rng.int(1, 300);
        let scale = rng.float(0.001, 0.5);
        let zp = zero_point(&mut rng);
        // Values on exact halves of the scale (ties), far outside int8, ordinary ones, NaN and infinities.
        let x: Vec<f32> = (0..n)
            .map(|i| match i % 11 {
                0 | 3 | 6 => (rng.int(0, 600) as f32 - 300.0 + 0.5) * scale,
                1 | 4 | 7 => rng.float(-400.0, 400.0) * scale,
                8 => [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][rng.int(0, 2)],
                _ => rng.float(-1.0, 1.0),
            })
            .collect();
        for rounding in [Rounding::HalfAwayFromZero, Rounding::HalfToEven] {
            let p = QuantizeParams {
                scale,
                zero_point: zp,
                rounding,
            };
            let operands = [typed_input(&[n], x.clone(), DType::F32)];
            varied += usize::from(check(gpu, OpKind::Quantize(p), &operands, &[n], DType::I8) >= 3);
            cases += 1;
        }
        let q = i8s(&mut rng, n);
        let p = DequantizeParams {
            scale,
            zero_point: zp,
        };
        let operands = [typed_input(&[n], q.clone(), DType::I8)];
        varied += usize::from(check(gpu, OpKind::Dequantize(p), &operands, &[n], DType::F32) >= 3);
        cases += 1;
        let y = (scale * rng.float(0.05, 20.0), zero_point(&mut rng));
        let p = RequantizeParams {
            rounding: rounding(&mut rng),
            ..RequantizeParams::from_scales((scale, zp), y)
        };
        let operands = [typed_input(&[n], q, DType::I8)];
        varied += usize::from(check(gpu, OpKind::Requantize(p), &operands, &[n], DType::I8) >= 3);
        cases += 1;
    }
    assert_varied(
        "quantize_dequantize_requantize_match_bit_for_bit",
        varied,
        cases,
    );
}

#[test]
fn int8_softmax_matches_bit_for_bit() {
    let Some(gpu) = vulkan() else { return };
    let (mut varied, mut cases) = (0usize, 0usize);
    let mut rng = Rng::new(6);
    for _ in 0..CASES {
        let rank = rng.int(1, 3);
        let dims: Vec<usize> = (0..rank).map(|_| rng.int(1, 12)).collect();
        let axis = rng.int(0, rank - 1);
        // Input scales from sharp to flat distributions (beta 1).
        let p = QuantSoftmaxParams::from_scale(1.0, f64::from(rng.float(0.005, 0.5)), axis as u8);
        let n = dims.iter().product();
        let operands = [typed_input(&dims, i8s(&mut rng, n), DType::I8)];
        varied +=
            usize::from(check(gpu, OpKind::QuantSoftmax(p), &operands, &dims, DType::I8) >= 3);
        cases += 1;
    }
    assert_varied("int8_softmax_matches_bit_for_bit", varied, cases);
}

#[test]
fn int8_lookup_table_matches_bit_for_bit() {
    let Some(gpu) = vulkan() else { return };
    let (mut varied, mut cases) = (0usize, 0usize);
    let mut rng = Rng::new(7);
    for _ in 0..CASES {
        let rank = rng.int(1, 4);
        let dims: Vec<usize> = (0..rank).map(|_| rng.int(1, 9)).collect();
        let n = dims.iter().product();
        let operands = [
            typed_input(&dims, i8s(&mut rng, n), DType::I8),
            weight_i8(&[256], weights_i8(&mut rng, 256)),
        ];
        varied += usize::from(check(gpu, OpKind::QuantLut, &operands, &dims, DType::I8) >= 3);
        cases += 1;
    }
    assert_varied("int8_lookup_table_matches_bit_for_bit", varied, cases);
}

/// Runs `model` on every image of `x` on the CPU and on `gpu` and returns how many output values
/// differ in their bits (every output: f32 ones, and int8 ones as their integer values).
fn differing_outputs(model: &AlignedBuf, gpu: Device, x: &[f32]) -> (usize, usize) {
    let outputs = |device: Device| -> Vec<Vec<f32>> {
        let mut s = DeviceSession::new(model.as_bytes(), device).unwrap();
        s.input(0).unwrap().write_f32(x).unwrap();
        s.run().unwrap();
        (0..s.output_count())
            .map(|k| s.output(k).unwrap().into_vec())
            .collect()
    };
    let (cpu, got) = (outputs(Device::Cpu), outputs(gpu));
    let total = cpu.iter().map(Vec::len).sum();
    let differ = cpu
        .iter()
        .zip(&got)
        .map(|(c, g)| {
            assert_eq!(c.len(), g.len());
            c.iter()
                .zip(g)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count()
        })
        .sum();
    (differ, total)
}

/// Ember's own post-training quantization of the digits CNN (int8 from input to softmax): every output
/// of all 360 test images is the same on Vulkan as on the CPU.
#[test]
fn int8_ptq_digits_same_bytes_on_vulkan_and_cpu() {
    use ember_convert::quantize::{self, Calibration};
    let Some(gpu) = vulkan() else { return };
    let digits = model_dir("digits");
    let onnx = std::fs::read(digits.join("model.onnx")).unwrap();
    let (_, calib) = read_npy_f32(&digits.join("calib.npy"));
    let samples: Vec<Vec<Vec<f32>>> = calib.chunks(64).map(|c| vec![c.to_vec()]).collect();
    let (shape, x) = read_npy_f32(&digits.join("x.npy"));
    let opts = ember_convert::ConvertOptions {
        shapes: vec![("input".into(), shape.clone())],
        ..Default::default()
    };
    let ranges = quantize::calibrate(
        &onnx,
        &Default::default(),
        &samples,
        Calibration::MinMax,
        &mut |_, _| {},
    )
    .unwrap();
    let (qdq, _) = quantize::quantize_qdq(&onnx, &ranges).unwrap();
    let converted = ember_convert::convert(&qdq, &opts).unwrap();
    let ops: Vec<&str> = converted.report.ops.iter().map(|(_, op)| *op).collect();
    assert!(ops.contains(&"QuantSoftmax"), "{ops:?}");
    let model = AlignedBuf::from_bytes(&converted.blob);
    let (differ, total) = differing_outputs(&model, gpu, &x);
    assert_eq!(differ, 0, "{differ} of {total} output values differ");
    eprintln!(
        "Ember PTQ digits: {total} outputs of {} images identical on {gpu} and cpu",
        shape[0]
    );
}

/// onnxruntime's quantize_static digits model, converted by Ember: the probabilities (output 0) and the
/// int8 logits (output 1) of all 360 test images are the same on Vulkan as on the CPU.
#[test]
fn int8_digits_same_bytes_on_vulkan_and_cpu() {
    let Some(gpu) = vulkan() else { return };
    let (shape, x) = read_npy_f32(&model_dir("digits").join("x.npy"));
    let onnx = std::fs::read(model_dir("digits_qdq").join("model.onnx")).unwrap();
    let opts = ember_convert::ConvertOptions {
        shapes: vec![("input".into(), shape.clone())],
        ..Default::default()
    };
    let converted = ember_convert::convert(&onnx, &opts).expect("the QDQ model converts");
    let model = AlignedBuf::from_bytes(&converted.blob);
    let (differ, total) = differing_outputs(&model, gpu, &x);
    assert_eq!(
        total,
        shape[0] * 20,
        "probabilities and int8 logits of every image"
    );
    assert_eq!(differ, 0, "{differ} of {total} output values differ");
    eprintln!(
        "digits_qdq: {total} outputs (probabilities and int8 logits) of {} images identical on {gpu} and cpu",
        shape[0]
    );
}
