//! int8 Conv2d (plain, grouped, depthwise) and FullyConnected, with per-channel requantization.

use ember_core::ops::quant::conv::{self, QuantConv2dParams};
use ember_core::ops::quant::fully_connected::{self, QuantFullyConnectedParams};
use ember_core::ops::quant::requant::{quantize_multiplier, RequantRounding};
use ember_core::ops::{In, Out};
use ember_core::Error;
use proptest::prelude::*;

use crate::edge::validate_agrees;
use crate::layer::{
    conv2d_geometry_is_valid, conv2d_terms, conv_output_len, fitting_len, grouped_dims, maybe_bias,
    quant_conv2d_params, Layer,
};

use super::{
    act_range, assert_within, clamp_lower_first, dim, int8_values, numel, requantize_real,
    rounding, scale, scale_definition, zero_point, Int8Kernels,
};

/// Quantization of a layer: input and output scales, per-channel weight scales, and the `[OC, 2]`
/// requantization rows the converter derives from them.
#[derive(Clone, Debug)]
pub struct LayerQuant {
    x_scale: f64,
    w_scales: Vec<f64>,
    y_scale: f64,
    requant: Vec<i32>,
}

impl LayerQuant {
    fn new(x_scale: f64, w_scales: Vec<f64>, y_scale: f64) -> Self {
        let requant = w_scales
            .iter()
            .flat_map(|&ws| {
                let (m, s) = quantize_multiplier(x_scale * ws / y_scale);
                [m, s]
            })
            .collect();
        LayerQuant {
            x_scale,
            w_scales,
            y_scale,
            requant,
        }
    }

    fn requant_dims(&self) -> [usize; 2] {
        [self.requant.len() / 2, 2]
    }

    /// Row `oc` of the requantization (row 0 when there is one row).
    fn row(&self, oc: usize) -> (i32, i32) {
        let r = if self.requant.len() == 2 { 0 } else { oc };
        (self.requant[2 * r], self.requant[2 * r + 1])
    }

    fn w_scale(&self, oc: usize) -> f64 {
        if self.w_scales.len() == 1 {
            self.w_scales[0]
        } else {
            self.w_scales[oc]
        }
    }
}

/// Scales for a layer of `channels` outputs, each summing `taps` products: weight scales per channel (or
/// one, per-tensor), and an output scale putting typical outputs within int8, sometimes saturating.
fn layer_quant(channels: usize, taps: usize) -> impl Strategy<Value = LayerQuant> {
    let per_tensor = prop::bool::weighted(0.2);
    (
        scale(0.005, 0.1),
        per_tensor,
        proptest::collection::vec(scale(0.001, 0.05), channels.max(1)),
        scale(5.0, 500.0),
    )
        .prop_map(move |(x_scale, per_tensor, mut w_scales, k)| {
            if per_tensor {
                w_scales.truncate(1);
            }
            let y_scale = x_scale * 0.02 * (taps.max(1) as f64).sqrt() * k;
            LayerQuant::new(x_scale, w_scales, y_scale)
        })
}

/// Symmetric int8 weights, `[-127, 127]`.
fn weights(n: usize) -> impl Strategy<Value = Vec<i8>> {
    proptest::collection::vec(-127i8..=127, n)
}

fn bias(n: usize, with: bool) -> BoxedStrategy<Option<Vec<i32>>> {
    maybe_bias(with, proptest::collection::vec(-20_000i32..20_000, n))
}

/// A convolution with int8 data.
pub type ConvCase = Layer<QuantConv2dParams, i8, i32, LayerQuant>;

/// `conv::validate` of a case.
fn validate(c: &ConvCase) -> Result<(), Error> {
    let requant_dims = c.q.requant_dims();
    c.validate_with(|x, w, b, y| conv::validate(&c.p, x, w, b, &requant_dims, y))
}

/// Runs the table's conv2d on a case.
fn run_conv2d(k: &Int8Kernels, c: &ConvCase) -> Vec<i8> {
    c.run(0x55, |x, w, b, y| {
        (k.conv2d)(&c.p, x, w, b, &c.q.requant, y)
    })
}

impl ConvCase {
    /// For each output (row-major), the integer accumulator `sum w * (x - zp) + b` by the textbook
    /// formula (i64, zero outside the input).
    fn accumulators(&self) -> Vec<i64> {
        let mut acc: Vec<i64> = (0..numel(&self.y_dims))
            .map(|i| {
                self.b
                    .as_ref()
                    .map_or(0, |b| i64::from(b[i % self.w_dims[0]]))
            })
            .collect();
        let x_zero_point = i64::from(self.p.x_zero_point);
        conv2d_terms(&self.p, self.x_dims, self.w_dims, self.y_dims, |y, x, w| {
            acc[y] += i64::from(self.w[w]) * (i64::from(self.x[x]) - x_zero_point);
        });
        acc
    }
}

/// Both definitions of a layer's outputs from its accumulators (`channels` the innermost dim): TFLite's
/// integer arithmetic, and the real-valued result requantized.
fn layer_definitions(
    acc: &[i64],
    channels: usize,
    q: &LayerQuant,
    rounding: RequantRounding,
    y_zero_point: i8,
    act: (i8, i8),
) -> (Vec<i8>, Vec<i8>) {
    let mut tflite = Vec::with_capacity(acc.len());
    let mut real = Vec::with_capacity(acc.len());
    for (i, &a) in acc.iter().enumerate() {
        let oc = i % channels;
        let (m, s) = q.row(oc);
        let scaled = scale_definition(rounding, a, m, s);
        tflite.push(clamp_lower_first(
            scaled + i64::from(y_zero_point),
            act.0,
            act.1,
        ));
        let value = a as f64 * q.x_scale * q.w_scale(oc);
        real.push(requantize_real(
            value,
            q.y_scale,
            y_zero_point,
            act.0,
            act.1,
        ));
    }
    (tflite, real)
}

/// Data, quantization and activation for a convolution of these shapes.
fn conv_with_values(
    geometry: QuantConv2dParams,
    x_dims: [usize; 4],
    w_dims: [usize; 4],
    y_dims: [usize; 4],
    with_bias: bool,
) -> impl Strategy<Value = ConvCase> {
    let taps = w_dims[1] * w_dims[2] * w_dims[3];
    let zps = (zero_point(), zero_point(), rounding())
        .prop_flat_map(|(x_zp, y_zp, r)| (Just(x_zp), Just(y_zp), act_range(y_zp), Just(r)));
    (
        int8_values(numel(&x_dims)),
        weights(numel(&w_dims)),
        bias(w_dims[0], with_bias),
        layer_quant(w_dims[0], taps),
        zps,
    )
        .prop_map(
            move |(x, w, b, q, (x_zero_point, y_zero_point, (act_min, act_max), rounding))| {
                ConvCase {
                    p: QuantConv2dParams {
                        x_zero_point,
                        y_zero_point,
                        act_min,
                        act_max,
                        rounding,
                        ..geometry
                    },
                    x_dims,
                    w_dims,
                    y_dims,
                    x,
                    w,
                    b,
                    q,
                }
            },
        )
}

/// A valid convolution: groups 1 to 3 (one input channel per group is depthwise, possibly with a channel
/// multiplier), kernels 1 to 3, strides 1 to 2, dilations 1 to 2, paddings 0 to 2, inputs just large
/// enough plus 0 to 2.
pub fn conv2d_case() -> impl Strategy<Value = ConvCase> {
    let channels = (1usize..=2, 1u16..=3, 1usize..=3, 1usize..=3); // batch, groups, IC/g, OC/g
    let kernel = (
        1usize..=3,
        1usize..=3,
        1u16..=2,
        1u16..=2,
        1u16..=2,
        1u16..=2,
    );
    let padding = (prop::array::uniform4(0u16..=2), 0usize..3, 0usize..3);
    (channels, kernel, padding, any::<bool>()).prop_flat_map(
        |((n, groups, icg, ocg), (kh, kw, sh, sw, dh, dw), (pads, extra_h, extra_w), with_bias)| {
            let g = quant_conv2d_params((sh, sw), (dh, dw), pads, groups);
            let h = fitting_len(kh, dh, g.pad_top + g.pad_bottom) + extra_h;
            let w = fitting_len(kw, dw, g.pad_left + g.pad_right) + extra_w;
            let oh = conv_output_len(h, kh, sh, dh, (g.pad_top, g.pad_bottom)).unwrap_or(0);
            let ow = conv_output_len(w, kw, sw, dw, (g.pad_left, g.pad_right)).unwrap_or(0);
            let dims = (n, h, w, icg, ocg);
            let [x_dims, w_dims, y_dims] =
                grouped_dims(dims, (kh, kw), (oh, ow), groups, (None, false));
            conv_with_values(g, x_dims, w_dims, y_dims, with_bias)
        },
    )
}

/// The table's conv2d against TFLite's integer arithmetic (exactly) and the real-valued convolution
/// (within 1 LSB).
pub fn check_conv2d(k: &Int8Kernels, c: &ConvCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(validate(c), Ok(()));
    let got = run_conv2d(k, c);
    let act = (c.p.act_min, c.p.act_max);
    let (tflite, real) = layer_definitions(
        &c.accumulators(),
        c.w_dims[0],
        &c.q,
        c.p.rounding,
        c.p.y_zero_point,
        act,
    );
    assert_within(&got, &tflite, 0)?;
    assert_within(&got, &real, 1)
}

/// Odd convolutions: any dim may be 0, strides, dilations and groups may be 0, paddings may exceed the
/// kernel, one output dim may be off by one, and the requantization may have a wrong row count.
pub fn conv2d_edge_case() -> impl Strategy<Value = ConvCase> {
    let size = |max: usize| prop_oneof![8 => 1usize..=max, 1 => Just(0usize)];
    let small = |max: u16| prop_oneof![8 => 1u16..=max, 1 => Just(0u16)];
    let dims = (size(2), size(4), size(4), size(2), size(2)); // n, h, w, IC/g, OC/g
    let kernel = (
        size(3),
        size(3),
        small(2),
        small(2),
        small(2),
        small(2),
        small(3),
    );
    let pads = prop::array::uniform4(prop_oneof![4 => 0u16..=1, 1 => 2u16..=3]);
    let mistakes = (
        prop::option::weighted(0.1, 0usize..4),
        prop::option::weighted(0.1, prop_oneof![Just(1usize), Just(2usize)]),
    );
    (dims, kernel, pads, mistakes, any::<bool>()).prop_flat_map(
        |(
            (n, h, w, icg, ocg),
            (kh, kw, sh, sw, dh, dw, groups),
            pads,
            (off_by_one, rows),
            with_bias,
        )| {
            let g = quant_conv2d_params((sh, sw), (dh, dw), pads, groups);
            let out_len = |size, k, s, d, pads| {
                if k == 0 || s == 0 || d == 0 {
                    1
                } else {
                    conv_output_len(size, k, s, d, pads).unwrap_or(1)
                }
            };
            let oh = out_len(h, kh, sh, dh, (g.pad_top, g.pad_bottom));
            let ow = out_len(w, kw, sw, dw, (g.pad_left, g.pad_right));
            let dims = (n, h, w, icg, ocg);
            let [x_dims, w_dims, y_dims] =
                grouped_dims(dims, (kh, kw), (oh, ow), groups, (off_by_one, false));
            conv_with_values(g, x_dims, w_dims, y_dims, with_bias).prop_map(move |mut c| {
                // A per-tensor row, or one row too many.
                match rows {
                    Some(1) => c.q.requant.truncate(2),
                    Some(_) => c.q.requant.extend([1 << 30, -1]),
                    None => {}
                }
                c
            })
        },
    )
}

/// Whether an odd convolution is well-formed, by the definition.
fn conv2d_is_valid(c: &ConvCase) -> bool {
    let rows = c.q.requant.len() / 2;
    conv2d_geometry_is_valid(&c.p, c.x_dims, c.w_dims, c.y_dims)
        && (rows == c.w_dims[0] || rows == 1)
}

/// `validate` agrees with the definition on odd convolutions, and whatever it accepts runs without
/// panicking and matches TFLite's arithmetic.
pub fn check_conv2d_edge(k: &Int8Kernels, c: &ConvCase) -> Result<(), TestCaseError> {
    let verdict = validate(c);
    if validate_agrees(&verdict, conv2d_is_valid(c))? {
        let act = (c.p.act_min, c.p.act_max);
        let oc = c.w_dims[0];
        let (tflite, _) = layer_definitions(
            &c.accumulators(),
            oc.max(1),
            &c.q,
            c.p.rounding,
            c.p.y_zero_point,
            act,
        );
        assert_within(&run_conv2d(k, c), &tflite, 0)?;
    }
    Ok(())
}

/// A fully connected layer with int8 data.
pub type FcCase = Layer<QuantFullyConnectedParams, i8, i32, LayerQuant, Vec<usize>, [usize; 2]>;

/// A valid fully connected layer: 0 to 2 batch dims (small, now and then 0), 1 to 40 inputs, 1 to 6
/// outputs.
pub fn fully_connected_case() -> impl Strategy<Value = FcCase> {
    let lead = proptest::collection::vec(dim(), 0..=2);
    (lead, 1usize..=40, 1usize..=6, any::<bool>()).prop_flat_map(
        |(lead, inputs, outputs, with_bias)| {
            let mut x_dims = lead.clone();
            x_dims.push(inputs);
            let mut y_dims = lead;
            y_dims.push(outputs);
            let zps = (zero_point(), zero_point(), rounding()).prop_flat_map(|(x_zp, y_zp, r)| {
                (Just(x_zp), Just(y_zp), act_range(y_zp), Just(r))
            });
            (
                int8_values(numel(&x_dims)),
                weights(inputs * outputs),
                bias(outputs, with_bias),
                layer_quant(outputs, inputs),
                zps,
            )
                .prop_map(
                    move |(
                        x,
                        w,
                        b,
                        q,
                        (x_zero_point, y_zero_point, (act_min, act_max), rounding),
                    )| {
                        FcCase {
                            p: QuantFullyConnectedParams {
                                x_zero_point,
                                y_zero_point,
                                act_min,
                                act_max,
                                rounding,
                            },
                            x_dims: x_dims.clone(),
                            w_dims: [outputs, inputs],
                            y_dims: y_dims.clone(),
                            x,
                            w,
                            b,
                            q,
                        }
                    },
                )
        },
    )
}

/// The table's fully connected kernel against both definitions.
pub fn check_fully_connected(k: &Int8Kernels, c: &FcCase) -> Result<(), TestCaseError> {
    let rq_dims = c.q.requant_dims();
    let verdict =
        c.validate_with(|x, w, b, y| fully_connected::validate(&c.p, x, w, b, &rq_dims, y));
    prop_assert_eq!(verdict, Ok(()));
    let [outputs, inputs] = c.w_dims;
    let rows = numel(&c.x_dims) / inputs;
    let mut acc = Vec::with_capacity(rows * outputs);
    for r in 0..rows {
        for o in 0..outputs {
            let mut sum = c.b.as_ref().map_or(0, |b| i64::from(b[o]));
            for i in 0..inputs {
                let xv = i64::from(c.x[r * inputs + i]) - i64::from(c.p.x_zero_point);
                sum += i64::from(c.w[o * inputs + i]) * xv;
            }
            acc.push(sum);
        }
    }
    let act = (c.p.act_min, c.p.act_max);
    let (tflite, real) =
        layer_definitions(&acc, outputs, &c.q, c.p.rounding, c.p.y_zero_point, act);
    let got = c.run(0x55, |x, w, b, y| {
        (k.fully_connected)(&c.p, x, w, b, &c.q.requant, y)
    });
    assert_within(&got, &tflite, 0)?;
    assert_within(&got, &real, 1)
}

/// Runs the table's conv2d on hand-written tensors, which `validate` must accept: `x` and `w` with
/// their dims, the bias, the requantization rows (`[OC or 1, 2]`) and the output's dims.
fn run_known_conv2d(
    k: &Int8Kernels,
    p: &QuantConv2dParams,
    (x, w): (In<'_, i8>, In<'_, i8>),
    b: Option<&[i32]>,
    requant: &[i32],
    y_dims: &[usize],
) -> Vec<i8> {
    let b_dims = b.map(|b| [b.len()]);
    let b_dims = b_dims.as_ref().map(|d| &d[..]);
    let rq_dims = [requant.len() / 2, 2];
    assert_eq!(
        conv::validate(p, x.dims, w.dims, b_dims, &rq_dims, y_dims),
        Ok(())
    );
    let mut y = vec![0; numel(y_dims)];
    let out = Out {
        data: &mut y,
        dims: y_dims,
    };
    (k.conv2d)(p, x, w, b, requant, out);
    y
}

/// Hand-computed convolutions.
pub fn known_conv2d(k: &Int8Kernels) {
    fn tensor<'a>(data: &'a [i8], dims: &'a [usize]) -> In<'a, i8> {
        In { data, dims }
    }
    // x (3x3, zero point 1, so real x = q - 1), w 2x2 [1 2; 3 4], bias 1, multiplier 0.5 (2^30 with
    // shift 0), output zero point -10:
    //   real x: 0 1 2 / 3 4 5 / 6 7 8; conv: 27, 37, 57, 67; plus 1, halved: 14, 19, 29, 34; minus 10.
    let x: Vec<i8> = (1..=9).collect();
    let p = QuantConv2dParams {
        x_zero_point: 1,
        y_zero_point: -10,
        ..quant_conv2d_params((1, 1), (1, 1), [0; 4], 1)
    };
    let xw = (
        tensor(&x, &[1, 3, 3, 1]),
        tensor(&[1, 2, 3, 4], &[1, 2, 2, 1]),
    );
    let y = run_known_conv2d(k, &p, xw, Some(&[1]), &[1 << 30, 0], &[1, 2, 2, 1]);
    assert_eq!(y, [4, 9, 19, 24]);

    // Depthwise with channel multiplier 2 (groups 1 = IC, OC 2), 1x1 kernel, per-channel multipliers
    // 1 and 0.25 ((2^30, 1) and (2^30, -1)), Relu at zero point 0 (act_min 0):
    //   x = [-3] (zero point 0): channel 0: -3 * 5 * 1 = -15 -> clamped to 0;
    //   channel 1: -3 * -7 = 21 times 0.25 is 5.25, but TFLite rounds twice: 21 * 0.5 = 10.5 -> 11 in
    //   the doubling high multiply, then 11 / 2 = 5.5 -> 6 in the rounding shift.
    let p = QuantConv2dParams {
        act_min: 0,
        ..quant_conv2d_params((1, 1), (1, 1), [0; 4], 1)
    };
    let xw = (
        tensor(&[-3], &[1, 1, 1, 1]),
        tensor(&[5, -7], &[2, 1, 1, 1]),
    );
    let requant = [1 << 30, 1, 1 << 30, -1];
    assert_eq!(
        run_known_conv2d(k, &p, xw, None, &requant, &[1, 1, 1, 2]),
        [0, 6]
    );

    // Padding holds the zero point: a 3x3 box of ones over a single pixel with padding 1 and x zero point
    // 7 sees x - 7 once: x = 10 gives 3 (multiplier 1).
    let p = QuantConv2dParams {
        x_zero_point: 7,
        ..quant_conv2d_params((1, 1), (1, 1), [1; 4], 1)
    };
    let xw = (tensor(&[10], &[1, 1, 1, 1]), tensor(&[1; 9], &[1, 3, 3, 1]));
    assert_eq!(
        run_known_conv2d(k, &p, xw, None, &[1 << 30, 1], &[1, 1, 1, 1]),
        [3]
    );
}

/// Hand-computed fully connected layers.
pub fn known_fully_connected(k: &Int8Kernels) {
    // x = [1, 2, 3] (zero point -1: real [2, 3, 4]), w = [[1, 0, -1], [2, 2, 2]], bias [10, -100],
    // multiplier 1 per tensor, output zero point 5: [2 - 4 + 10, 18 - 100] + 5 = [13, -77].
    let p = QuantFullyConnectedParams {
        rounding: RequantRounding::Double,
        x_zero_point: -1,
        y_zero_point: 5,
        act_min: i8::MIN,
        act_max: i8::MAX,
    };
    assert_eq!(
        fully_connected::validate(&p, &[1, 3], &[2, 3], Some(&[2]), &[1, 2], &[1, 2]),
        Ok(())
    );
    let run = |p: &QuantFullyConnectedParams, bias: &[i32]| {
        let mut y = [0i8; 2];
        (k.fully_connected)(
            p,
            In {
                data: &[1, 2, 3],
                dims: &[1, 3],
            },
            In {
                data: &[1, 0, -1, 2, 2, 2],
                dims: &[2, 3],
            },
            Some(bias),
            &[1 << 30, 1],
            Out {
                data: &mut y,
                dims: &[1, 2],
            },
        );
        y
    };
    assert_eq!(run(&p, &[10, -100]), [13, -77]);
    // Saturation: a large accumulator clamps to 127, and a Relu6-like clamp to 0..=60.
    let p = QuantFullyConnectedParams {
        act_min: 0,
        act_max: 60,
        ..p
    };
    assert_eq!(run(&p, &[10, 1000]), [13, 60]);
}

/// `validate` rejects wrong shapes and requantization tensors.
pub fn validate_rejects_bad_shapes() {
    let p = quant_conv2d_params((1, 1), (1, 1), [0; 4], 1);
    let (x, w, y): (&[usize], &[usize], &[usize]) = (&[1, 3, 3, 2], &[4, 2, 2, 2], &[1, 2, 2, 4]);
    assert_eq!(conv::validate(&p, x, w, Some(&[4]), &[4, 2], y), Ok(()));
    assert_eq!(conv::validate(&p, x, w, None, &[1, 2], y), Ok(()));
    let bad_requant: [&[usize]; 4] = [&[3, 2], &[4, 3], &[4], &[4, 2, 1]];
    for r in bad_requant {
        assert!(
            matches!(
                conv::validate(&p, x, w, None, r, y),
                Err(Error::Shape { .. })
            ),
            "{r:?}"
        );
    }
    let zero_stride = QuantConv2dParams { stride_w: 0, ..p };
    assert!(conv::validate(&zero_stride, x, w, None, &[4, 2], y).is_err());
    let bad_groups = QuantConv2dParams { groups: 2, ..p };
    assert!(conv::validate(&bad_groups, x, w, None, &[4, 2], y).is_err());
    assert!(conv::validate(&p, x, &[4, 2, 2, 3], None, &[4, 2], y).is_err()); // IC mismatch
    assert!(conv::validate(&p, x, w, Some(&[3]), &[4, 2], y).is_err()); // bias length
    assert!(conv::validate(&p, x, w, None, &[4, 2], &[1, 2, 2, 3]).is_err()); // OC

    let fc = QuantFullyConnectedParams {
        rounding: RequantRounding::Double,
        x_zero_point: 0,
        y_zero_point: 0,
        act_min: -128,
        act_max: 127,
    };
    assert_eq!(
        fully_connected::validate(&fc, &[2, 5], &[3, 5], None, &[3, 2], &[2, 3]),
        Ok(())
    );
    assert!(fully_connected::validate(&fc, &[2, 5], &[3, 5], None, &[2, 2], &[2, 3]).is_err());
    assert!(fully_connected::validate(&fc, &[2, 4], &[3, 5], None, &[3, 2], &[2, 3]).is_err());
    assert!(
        fully_connected::validate(&fc, &[2, 5], &[3, 5], Some(&[2]), &[3, 2], &[2, 3]).is_err()
    );
    assert!(fully_connected::validate(&fc, &[2, 5], &[3, 5], None, &[3, 2], &[1, 3]).is_err());
}
