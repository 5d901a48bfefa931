//! The int8 kernels against TFLM's own outputs: `tests/tflm/golden.txt`, made by `tests/tflm/make.py`
//! from single-op `.tflite` models run by TFLM's interpreter (the `tflite-micro` Python package).
//!
//! Each case gives the op as a `.tflite` describes it (geometry, fused activation, float scales and zero
//! points), its data, and TFLM's output. Ember's parameters are derived here with Ember's converter-side
//! helpers (`quantize_multiplier`, `activation_range`, the `from_scales` constructors), so the check
//! covers them too: the kernels must reproduce TFLM bit for bit.

use std::collections::HashMap;

use ember_core::ops::math::activation::Activation;
use ember_core::ops::pool::Pool2dParams;
use ember_core::ops::quant::add::QuantAddParams;
use ember_core::ops::quant::avg_pool::QuantAvgPoolParams;
use ember_core::ops::quant::conv::{self, QuantConv2dParams};
use ember_core::ops::quant::dequantize::DequantizeParams;
use ember_core::ops::quant::fully_connected::{self, QuantFullyConnectedParams};
use ember_core::ops::quant::max_pool::QuantMaxPoolParams;
use ember_core::ops::quant::mul::QuantMulParams;
use ember_core::ops::quant::quantize::{QuantizeParams, Rounding};
use ember_core::ops::quant::requant::{activation_range, channel_multiplier, RequantRounding};
use ember_core::ops::quant::requantize::RequantizeParams;
use ember_core::ops::quant::softmax::QuantSoftmaxParams;
use ember_core::ops::{In, Out};

use crate::layer::{quant_conv2d_params, Layer};
use crate::shape::run_elementwise;

use super::{numel, Int8Kernels};
use crate::shape::run_into;

/// The golden cases, written by `tests/tflm/make.py`.
const GOLDEN: &str = include_str!("../../../tests/tflm/golden.txt");

/// One case: its name and its `key -> words` lines.
struct Case<'a> {
    name: &'a str,
    fields: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> Case<'a> {
    fn words(&self, key: &str) -> &[&'a str] {
        self.fields
            .get(key)
            .unwrap_or_else(|| panic!("{}: no `{key}`", self.name))
    }

    fn parse<T: std::str::FromStr>(&self, key: &str) -> Vec<T> {
        self.words(key)
            .iter()
            .map(|w| {
                w.parse()
                    .unwrap_or_else(|_| panic!("{}: bad `{key}` value {w}", self.name))
            })
            .collect()
    }

    fn usizes(&self, key: &str) -> Vec<usize> {
        self.parse(key)
    }

    fn i8s(&self, key: &str) -> Vec<i8> {
        self.parse(key)
    }

    fn u16s(&self, key: &str) -> Vec<u16> {
        self.parse(key)
    }

    /// `(scale, zero_point)` of a `<key> scale zero_point` line.
    fn quant(&self, key: &str) -> (f32, i8) {
        let w = self.words(key);
        (w[0].parse().unwrap(), w[1].parse().unwrap())
    }

    /// The fused activation of the `act` line (0 none, 1 Relu, 2 Relu6).
    fn activation(&self) -> Activation {
        match self.words("act")[0] {
            "0" => Activation::None,
            "1" => Activation::Relu,
            "2" => Activation::Relu6,
            other => panic!("{}: unknown activation {other}", self.name),
        }
    }
}

fn cases() -> Vec<Case<'static>> {
    let mut cases = Vec::new();
    let mut current: Option<Case<'static>> = None;
    for line in GOLDEN.lines() {
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            cases.extend(current.take());
            continue;
        }
        let mut words = line.split_whitespace();
        let key = words.next().unwrap();
        let values: Vec<&str> = words.collect();
        if key == "case" {
            cases.extend(current.take());
            current = Some(Case {
                name: values[0],
                fields: HashMap::new(),
            });
        } else if let Some(case) = current.as_mut() {
            case.fields.insert(key, values);
        }
    }
    cases.extend(current);
    cases
}

/// Ember's per-channel requantization rows, by the converter-side helper.
fn requant_rows(x_scale: f32, w_scales: &[f32], y_scale: f32) -> Vec<i32> {
    w_scales
        .iter()
        .flat_map(|&w| {
            let (m, s) = channel_multiplier(x_scale, w, y_scale);
            [m, s]
        })
        .collect()
}

/// What every TFLM layer case holds of its quantization: the input and output scales, and the zero
/// points, the clamp of its activation and TFLite's double rounding as fully connected parameters.
fn layer_quant(c: &Case<'_>) -> (f32, f32, QuantFullyConnectedParams) {
    let ((x_scale, x_zp), (y_scale, y_zp)) = (c.quant("x_quant"), c.quant("y_quant"));
    let (act_min, act_max) = activation_range(c.activation(), y_scale, y_zp);
    let p = QuantFullyConnectedParams {
        rounding: RequantRounding::Double,
        x_zero_point: x_zp,
        y_zero_point: y_zp,
        act_min,
        act_max,
    };
    (x_scale, y_scale, p)
}

fn run_conv2d(k: &Int8Kernels, c: &Case<'_>) -> Vec<i8> {
    let (x_scale, y_scale, q) = layer_quant(c);
    let (stride, dilation, pad) = (c.u16s("stride"), c.u16s("dilation"), c.u16s("pad"));
    let geometry = quant_conv2d_params(
        (stride[0], stride[1]),
        (dilation[0], dilation[1]),
        [pad[0], pad[1], pad[2], pad[3]],
        c.u16s("groups")[0],
    );
    let p = QuantConv2dParams {
        rounding: q.rounding,
        x_zero_point: q.x_zero_point,
        y_zero_point: q.y_zero_point,
        act_min: q.act_min,
        act_max: q.act_max,
        ..geometry
    };
    let l = tflm_layer(c, x_scale, y_scale, |x, w, b, q, y| {
        conv::validate(&p, x, w, b, q, y)
    });
    l.run(0x55, |x, w, b, y| (k.conv2d)(&p, x, w, b, &l.q, y))
}

fn run_fully_connected(k: &Int8Kernels, c: &Case<'_>) -> Vec<i8> {
    let (x_scale, y_scale, p) = layer_quant(c);
    let l = tflm_layer(c, x_scale, y_scale, |x, w, b, q, y| {
        fully_connected::validate(&p, x, w, b, q, y)
    });
    l.run(0x55, |x, w, b, y| (k.fully_connected)(&p, x, w, b, &l.q, y))
}

/// A TFLM layer case's tensors: `x`, `w`, the bias `b` and their dims, and as `q` the requantization
/// rows from the input scale, the weights' scales (`w_scales`) and the output scale; asserts that
/// `validate` (given the dims of x, w, b, the rows and y) accepts them.
fn tflm_layer<E: std::fmt::Debug + PartialEq>(
    c: &Case<'_>,
    x_scale: f32,
    y_scale: f32,
    validate: impl FnOnce(&[usize], &[usize], Option<&[usize]>, &[usize], &[usize]) -> Result<(), E>,
) -> TflmLayer {
    let l = Layer {
        p: (),
        x_dims: c.usizes("x_shape"),
        w_dims: c.usizes("w_shape"),
        y_dims: c.usizes("y_shape"),
        x: c.i8s("x"),
        w: c.i8s("w"),
        b: Some(c.parse("b")),
        q: requant_rows(x_scale, &c.parse::<f32>("w_scales"), y_scale),
    };
    let b_dims = l.b_dims();
    let verdict = validate(
        &l.x_dims,
        &l.w_dims,
        b_dims.as_ref().map(|d| &d[..]),
        &[l.q.len() / 2, 2],
        &l.y_dims,
    );
    assert_eq!(verdict, Ok(()), "{}", c.name);
    l
}

/// An int8 layer as the TFLM cases hold it: dims as read, the requantization rows as `q`.
type TflmLayer = Layer<(), i8, i32, Vec<i32>, Vec<usize>, Vec<usize>>;

fn run_binary(k: &Int8Kernels, c: &Case<'_>, op: &str) -> Vec<i8> {
    let (a_q, b_q, y_q) = (c.quant("a_quant"), c.quant("b_quant"), c.quant("y_quant"));
    let (act_min, act_max) = activation_range(c.activation(), y_q.0, y_q.1);
    let (a_dims, b_dims, y_dims) = (
        c.usizes("a_shape"),
        c.usizes("b_shape"),
        c.usizes("y_shape"),
    );
    let (a, b) = (c.i8s("a"), c.i8s("b"));
    let a = In {
        data: &a,
        dims: &a_dims,
    };
    let b = In {
        data: &b,
        dims: &b_dims,
    };
    let mut y = vec![0x55; numel(&y_dims)];
    let out = Out {
        data: &mut y,
        dims: &y_dims,
    };
    if op == "add" {
        let p = QuantAddParams::from_scales(a_q, b_q, y_q, act_min, act_max);
        let verdict = ember_core::ops::quant::add::validate(&p, &a_dims, &b_dims, &y_dims);
        assert_eq!(verdict, Ok(()), "{}", c.name);
        (k.add)(&p, a, b, out);
    } else {
        let p = QuantMulParams::from_scales(a_q, b_q, y_q, act_min, act_max);
        let verdict = ember_core::ops::quant::mul::validate(&p, &a_dims, &b_dims, &y_dims);
        assert_eq!(verdict, Ok(()), "{}", c.name);
        (k.mul)(&p, a, b, out);
    }
    y
}

fn run_pool(k: &Int8Kernels, c: &Case<'_>, op: &str) -> Vec<i8> {
    let (kernel, stride, pad) = (c.u16s("kernel"), c.u16s("stride"), c.u16s("pad"));
    let (scale, zero_point) = c.quant("x_quant");
    let (act_min, act_max) = activation_range(c.activation(), scale, zero_point);
    let window = Pool2dParams {
        kernel_h: kernel[0],
        kernel_w: kernel[1],
        stride_h: stride[0],
        stride_w: stride[1],
        pad_top: pad[0],
        pad_left: pad[1],
        pad_bottom: pad[2],
        pad_right: pad[3],
        count_include_pad: false,
    };
    let (x_dims, y_dims) = (c.usizes("x_shape"), c.usizes("y_shape"));
    let x = c.i8s("x");
    let mut y = vec![0x55; numel(&y_dims)];
    let x = In {
        data: &x,
        dims: &x_dims,
    };
    let out = Out {
        data: &mut y,
        dims: &y_dims,
    };
    if op == "avg_pool" {
        let p = QuantAvgPoolParams {
            window,
            zero_point,
            act_min,
            act_max,
        };
        let verdict = ember_core::ops::quant::avg_pool::validate(&p, &x_dims, &y_dims);
        assert_eq!(verdict, Ok(()), "{}", c.name);
        (k.avg_pool)(&p, x, out);
    } else {
        let p = QuantMaxPoolParams {
            window,
            act_min,
            act_max,
        };
        let verdict = ember_core::ops::quant::max_pool::validate(&p, &x_dims, &y_dims);
        assert_eq!(verdict, Ok(()), "{}", c.name);
        (k.max_pool)(&p, x, out);
    }
    y
}

fn run_softmax(k: &Int8Kernels, c: &Case<'_>) -> Vec<i8> {
    let beta: f32 = c.parse("beta")[0];
    let (scale, _) = c.quant("x_quant");
    let dims = c.usizes("x_shape");
    let axis = (dims.len() - 1) as u8;
    let p = QuantSoftmaxParams::from_scale(f64::from(beta), f64::from(scale), axis);
    let verdict = ember_core::ops::quant::softmax::validate(&p, &dims, &dims);
    assert_eq!(verdict, Ok(()), "{}", c.name);
    run_into(&dims, 0x55, |y| {
        (k.softmax)(
            &p,
            In {
                data: &c.i8s("x"),
                dims: &dims,
            },
            y,
        )
    })
}

fn run_quantize(k: &Int8Kernels, c: &Case<'_>) -> Vec<i8> {
    let (scale, zero_point) = c.quant("y_quant");
    let p = QuantizeParams {
        scale,
        zero_point,
        rounding: Rounding::HalfAwayFromZero,
    };
    let x: Vec<f32> = c.parse("x");
    run_elementwise(&x, 0x55, |x, y| (k.quantize)(&p, x, y))
}

fn run_requantize(k: &Int8Kernels, c: &Case<'_>) -> Vec<i8> {
    let p = RequantizeParams::from_scales(c.quant("x_quant"), c.quant("y_quant"));
    let x = c.i8s("x");
    run_elementwise(&x, 0x55, |x, y| (k.requantize)(&p, x, y))
}

fn check_dequantize(k: &Int8Kernels, c: &Case<'_>) -> usize {
    let (scale, zero_point) = c.quant("x_quant");
    let p = DequantizeParams { scale, zero_point };
    let x = c.i8s("x");
    let want: Vec<f32> = c.parse("y");
    let y = run_elementwise(&x, f32::NAN, |x, y| (k.dequantize)(&p, x, y));
    y.iter()
        .zip(&want)
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count()
}

/// Every golden case through the table's kernels: the number of cases, and a message per case whose
/// output differs from TFLM's.
pub fn compare_with_tflm(k: &Int8Kernels) -> (usize, Vec<String>) {
    let cases = cases();
    let mut mismatches = Vec::new();
    for c in &cases {
        let op = c.words("op")[0];
        if op == "dequantize" {
            let differing = check_dequantize(k, c);
            if differing > 0 {
                mismatches.push(format!("{}: {differing} values differ", c.name));
            }
            continue;
        }
        let got = match op {
            "conv2d" => run_conv2d(k, c),
            "fully_connected" => run_fully_connected(k, c),
            "add" | "mul" => run_binary(k, c, op),
            "avg_pool" | "max_pool" => run_pool(k, c, op),
            "softmax" => run_softmax(k, c),
            "quantize" => run_quantize(k, c),
            "requantize" => run_requantize(k, c),
            other => panic!("{}: unknown op {other}", c.name),
        };
        let want = c.i8s("y");
        if got != want {
            mismatches.push(format!("{}:\n  got  {got:?}\n  want {want:?}", c.name));
        }
    }
    (cases.len(), mismatches)
}

/// The table reproduces TFLM's outputs bit for bit on every golden case.
pub fn check_tflm_golden(k: &Int8Kernels) {
    let (count, mismatches) = compare_with_tflm(k);
    assert!(count >= 90, "only {count} golden cases");
    assert!(
        mismatches.is_empty(),
        "{} of {count} cases differ from TFLM:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
