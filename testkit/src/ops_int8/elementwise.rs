//! int8 Add and Mul (with broadcasting), Requantize, and the graph-edge Quantize and Dequantize.

use ember_core::ops::quant::add::{self, QuantAddParams};
use ember_core::ops::quant::dequantize::{self, DequantizeParams};
use ember_core::ops::quant::mul::{self, QuantMulParams};
use ember_core::ops::quant::quantize::{self, QuantizeParams, Rounding};
use ember_core::ops::quant::requantize::{self, RequantizeParams};
use ember_core::ops::{In, Out};
use proptest::prelude::*;

use crate::shape::run_elementwise;

use ember_core::ops::quant::requant::RequantRounding;

use super::{
    act_range, assert_within, clamp_lower_first, int8_values, numel, requantize_real, scale,
    scale_definition, zero_point, Int8Kernels,
};

/// Two input shapes that broadcast, and their broadcast: from dims of rank 0 to 4 (1 to 3, now and then
/// 0), each input drops some leading axes and has some others set to 1.
fn broadcast_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>)> {
    let dim = prop_oneof![10 => 1usize..=3, 1 => Just(0usize)];
    proptest::collection::vec(dim, 0..=4).prop_flat_map(|full| {
        let rank = full.len();
        let input = (0..=rank, proptest::collection::vec(any::<bool>(), rank)).prop_map({
            let full = full.clone();
            move |(drop, ones)| {
                full.iter()
                    .zip(&ones)
                    .skip(drop)
                    .map(|(&d, &one)| if one { 1 } else { d })
                    .collect::<Vec<_>>()
            }
        });
        (input.clone(), input).prop_map(|(a, b)| {
            // numpy: right-aligned, a missing axis or a 1 takes the other's size.
            let rank = a.len().max(b.len());
            let at = |dims: &[usize], i: usize| {
                (i + dims.len()).checked_sub(rank).map_or(1, |j| dims[j])
            };
            let y = (0..rank)
                .map(|i| {
                    let (da, db) = (at(&a, i), at(&b, i));
                    if da == 1 {
                        db
                    } else {
                        da
                    }
                })
                .collect();
            (y, a, b)
        })
    })
}

/// Flat position in `dims` (right-aligned under `y_dims`, size-1 axes broadcast) of output index `index`.
fn broadcast_position(index: &[usize], dims: &[usize]) -> usize {
    let skip = index.len() - dims.len();
    index[skip..]
        .iter()
        .zip(dims)
        .fold(0, |acc, (&i, &d)| acc * d + if d == 1 { 0 } else { i })
}

/// Every output index of `y_dims`, row-major.
fn indices(y_dims: &[usize]) -> Vec<Vec<usize>> {
    (0..numel(y_dims))
        .map(|mut position| {
            let mut index = vec![0; y_dims.len()];
            for (i, &d) in y_dims.iter().enumerate().rev() {
                index[i] = position % d;
                position /= d;
            }
            index
        })
        .collect()
}

/// A broadcasting binary op on int8 data: shapes, values, and `(scale, zero_point)` of `a`, `b`, `y`.
#[derive(Clone, Debug)]
pub struct BinaryCase {
    y_dims: Vec<usize>,
    a_dims: Vec<usize>,
    b_dims: Vec<usize>,
    a: Vec<i8>,
    b: Vec<i8>,
    a_q: (f64, i8),
    b_q: (f64, i8),
    y_q: (f64, i8),
    act: (i8, i8),
}

impl BinaryCase {
    /// Calls `kernel` on the case's tensors.
    fn run(&self, kernel: impl Fn(In<'_, i8>, In<'_, i8>, Out<'_, i8>)) -> Vec<i8> {
        let mut y = vec![0x55; numel(&self.y_dims)];
        kernel(
            In {
                data: &self.a,
                dims: &self.a_dims,
            },
            In {
                data: &self.b,
                dims: &self.b_dims,
            },
            Out {
                data: &mut y,
                dims: &self.y_dims,
            },
        );
        y
    }

    /// `f(a, b)` at every output position, with `a` and `b` broadcast.
    fn map<T>(&self, f: impl Fn(i8, i8) -> T) -> Vec<T> {
        indices(&self.y_dims)
            .iter()
            .map(|index| {
                let a = self.a[broadcast_position(index, &self.a_dims)];
                let b = self.b[broadcast_position(index, &self.b_dims)];
                f(a, b)
            })
            .collect()
    }

    /// Checks a kernel's output against TFLite's arithmetic (`tflite`, exactly) and against `op` on
    /// the operands' real values, requantized (within 1 LSB).
    fn check_output(
        &self,
        got: &[i8],
        tflite: &[i8],
        op: impl Fn(f64, f64) -> f64,
    ) -> Result<(), TestCaseError> {
        assert_within(got, tflite, 0)?;
        let y_scale = f64::from(self.y_q.0 as f32);
        let (y_zero_point, (act_min, act_max)) = (self.y_q.1, self.act);
        let want = self.map(|a, b| {
            let value = op(real(a, self.a_q), real(b, self.b_q));
            requantize_real(value, y_scale, y_zero_point, act_min, act_max)
        });
        assert_within(got, &want, 1)
    }
}

/// Shapes, values and quantizations; the output scale is `y_scale(a_scale, b_scale)`.
fn binary_case(y_scale: fn(f64, f64, f64) -> f64) -> impl Strategy<Value = BinaryCase> {
    let quant = (scale(0.005, 1.0), scale(0.005, 1.0), scale(1.0, 100.0));
    let zps = (zero_point(), zero_point(), zero_point())
        .prop_flat_map(|(a, b, y)| (Just((a, b, y)), act_range(y)));
    (broadcast_shapes(), quant, zps).prop_flat_map(
        move |((y_dims, a_dims, b_dims), (a_s, b_s, k), (zps, act))| {
            let y_s = y_scale(a_s, b_s, k);
            (int8_values(numel(&a_dims)), int8_values(numel(&b_dims))).prop_map(move |(a, b)| {
                BinaryCase {
                    y_dims: y_dims.clone(),
                    a_dims: a_dims.clone(),
                    b_dims: b_dims.clone(),
                    a,
                    b,
                    a_q: (a_s, zps.0),
                    b_q: (b_s, zps.1),
                    y_q: (y_s, zps.2),
                    act,
                }
            })
        },
    )
}

/// Add cases: the output scale between a tenth and 10 times the larger input scale.
pub fn add_case() -> impl Strategy<Value = BinaryCase> {
    binary_case(|a, b, k| a.max(b) * k / 10.0)
}

/// Mul cases: the output scale `a_scale * b_scale` times 1 to 100.
pub fn mul_case() -> impl Strategy<Value = BinaryCase> {
    binary_case(|a, b, k| a * b * k)
}

fn add_params(c: &BinaryCase) -> QuantAddParams {
    let f = |(s, zp): (f64, i8)| (s as f32, zp);
    QuantAddParams::from_scales(f(c.a_q), f(c.b_q), f(c.y_q), c.act.0, c.act.1)
}

fn mul_params(c: &BinaryCase) -> QuantMulParams {
    let f = |(s, zp): (f64, i8)| (s as f32, zp);
    QuantMulParams::from_scales(f(c.a_q), f(c.b_q), f(c.y_q), c.act.0, c.act.1)
}

/// The real value of `q` quantized with `(scale, zero_point)` (the scale as the f32 a blob stores).
fn real(q: i8, (scale, zero_point): (f64, i8)) -> f64 {
    f64::from(scale as f32) * (f64::from(q) - f64::from(zero_point))
}

/// The table's Add, in both rounding modes, against TFLite's arithmetic (exactly) and the real sum (within 1 LSB).
pub fn check_add(k: &Int8Kernels, c: &BinaryCase) -> Result<(), TestCaseError> {
    for rounding in [RequantRounding::Double, RequantRounding::Single] {
        let p = QuantAddParams {
            rounding,
            ..add_params(c)
        };
        prop_assert_eq!(add::validate(&p, &c.a_dims, &c.b_dims, &c.y_dims), Ok(()));
        let got = c.run(|a, b, y| (k.add)(&p, a, b, y));
        let tflite = c.map(|a, b| {
            let scaled = |q: i8, zp: i8, m, s| {
                let shifted = (i64::from(q) - i64::from(zp)) << p.left_shift;
                scale_definition(p.rounding, shifted, m, s)
            };
            let sum = scaled(a, p.a_zero_point, p.a_multiplier, p.a_shift)
                + scaled(b, p.b_zero_point, p.b_multiplier, p.b_shift);
            let out = scale_definition(p.rounding, sum, p.y_multiplier, p.y_shift)
                + i64::from(p.y_zero_point);
            clamp_lower_first(out, p.act_min, p.act_max)
        });
        c.check_output(&got, &tflite, |a, b| a + b)?;
    }
    Ok(())
}

/// The table's Mul, in both rounding modes, against TFLite's arithmetic (exactly) and the real product (within 1 LSB).
pub fn check_mul(k: &Int8Kernels, c: &BinaryCase) -> Result<(), TestCaseError> {
    for rounding in [RequantRounding::Double, RequantRounding::Single] {
        let p = QuantMulParams {
            rounding,
            ..mul_params(c)
        };
        prop_assert_eq!(mul::validate(&p, &c.a_dims, &c.b_dims, &c.y_dims), Ok(()));
        let got = c.run(|a, b, y| (k.mul)(&p, a, b, y));
        let tflite = c.map(|a, b| {
            let product = (i64::from(a) - i64::from(p.a_zero_point))
                * (i64::from(b) - i64::from(p.b_zero_point));
            let out = scale_definition(p.rounding, product, p.multiplier, p.shift)
                + i64::from(p.y_zero_point);
            clamp_lower_first(out, p.act_min, p.act_max)
        });
        c.check_output(&got, &tflite, |a, b| a * b)?;
    }
    Ok(())
}

/// A requantization: values and the input and output `(scale, zero_point)`.
#[derive(Clone, Debug)]
pub struct RequantizeCase {
    x: Vec<i8>,
    x_q: (f64, i8),
    y_q: (f64, i8),
}

/// Up to 64 values, a scale ratio between 1/20 and 20.
pub fn requantize_case() -> impl Strategy<Value = RequantizeCase> {
    (
        proptest::collection::vec(any::<i8>(), 0..64),
        scale(0.01, 1.0),
        scale(0.05, 20.0),
        zero_point(),
        zero_point(),
    )
        .prop_map(|(x, x_s, ratio, x_zp, y_zp)| RequantizeCase {
            x,
            x_q: (x_s, x_zp),
            y_q: (x_s / ratio, y_zp),
        })
}

/// The table's Requantize, in both rounding modes, against TFLite's arithmetic (exactly) and the real value (within 1 LSB).
pub fn check_requantize(k: &Int8Kernels, c: &RequantizeCase) -> Result<(), TestCaseError> {
    for rounding in [RequantRounding::Double, RequantRounding::Single] {
        let p = RequantizeParams {
            rounding,
            ..RequantizeParams::from_scales((c.x_q.0 as f32, c.x_q.1), (c.y_q.0 as f32, c.y_q.1))
        };
        let dims = [c.x.len()];
        prop_assert_eq!(requantize::validate(&p, &dims, &dims), Ok(()));
        let got = run_elementwise(&c.x, 0x55, |x, y| (k.requantize)(&p, x, y));
        let tflite: Vec<i8> =
            c.x.iter()
                .map(|&v| {
                    let centered = i64::from(v) - i64::from(p.x_zero_point);
                    let out = scale_definition(p.rounding, centered, p.multiplier, p.shift)
                        + i64::from(p.y_zero_point);
                    clamp_lower_first(out, i8::MIN, i8::MAX)
                })
                .collect();
        assert_within(&got, &tflite, 0)?;
        let y_scale = f64::from(c.y_q.0 as f32);
        let want: Vec<i8> =
            c.x.iter()
                .map(|&v| requantize_real(real(v, c.x_q), y_scale, c.y_q.1, i8::MIN, i8::MAX))
                .collect();
        assert_within(&got, &want, 1)?;
    }
    Ok(())
}

/// A quantization of f32 values.
#[derive(Clone, Debug)]
pub struct QuantizeCase {
    p: QuantizeParams,
    x: Vec<f32>,
}

/// Values around the int8 range of the scale, exact ties (`(k + 1/2) * scale`), and specials.
pub fn quantize_case() -> impl Strategy<Value = QuantizeCase> {
    let rounding = prop_oneof![Just(Rounding::HalfAwayFromZero), Just(Rounding::HalfToEven)];
    (scale(0.001, 10.0), zero_point(), rounding).prop_flat_map(|(s, zero_point, rounding)| {
        let s = s as f32;
        let value = prop_oneof![
            4 => (-300.0f32..300.0).prop_map(move |k| k * s),
            2 => (-300i32..300).prop_map(move |k| (k as f32 + 0.5) * s),
            1 => prop_oneof![
                Just(f32::NAN),
                Just(f32::INFINITY),
                Just(f32::NEG_INFINITY),
                Just(1e30f32),
                Just(-0.0f32)
            ],
        ];
        proptest::collection::vec(value, 0..48).prop_map(move |x| QuantizeCase {
            p: QuantizeParams {
                scale: s,
                zero_point,
                rounding,
            },
            x,
        })
    })
}

/// `v` rounded to an integer with ties to even.
fn round_half_even(v: f64) -> f64 {
    let floor = v.floor();
    let diff = v - floor;
    if diff > 0.5 || (diff == 0.5 && floor % 2.0 != 0.0) {
        floor + 1.0
    } else {
        floor
    }
}

/// The table's Quantize against its definition: `x / scale` in f32 (as TFLM divides), rounded, plus the
/// zero point, saturated; NaN gives the zero point. Exactly.
pub fn check_quantize(k: &Int8Kernels, c: &QuantizeCase) -> Result<(), TestCaseError> {
    let dims = [c.x.len()];
    prop_assert_eq!(quantize::validate(&c.p, &dims, &dims), Ok(()));
    let got = run_elementwise(&c.x, 0x55, |x, y| (k.quantize)(&c.p, x, y));
    let want: Vec<i8> =
        c.x.iter()
            .map(|&v| {
                let q = f64::from(v / c.p.scale);
                let rounded = match c.p.rounding {
                    Rounding::HalfAwayFromZero => q.round(),
                    Rounding::HalfToEven => round_half_even(q),
                };
                if rounded.is_nan() {
                    return c.p.zero_point;
                }
                let shifted = rounded.clamp(-1e6, 1e6) as i64 + i64::from(c.p.zero_point);
                clamp_lower_first(shifted, i8::MIN, i8::MAX)
            })
            .collect();
    assert_within(&got, &want, 0)
}

/// A dequantization of int8 values.
#[derive(Clone, Debug)]
pub struct DequantizeCase {
    p: DequantizeParams,
    x: Vec<i8>,
}

/// Any values, scales from 1e-4 to 100.
pub fn dequantize_case() -> impl Strategy<Value = DequantizeCase> {
    (
        proptest::collection::vec(any::<i8>(), 0..64),
        scale(1e-4, 100.0),
        zero_point(),
    )
        .prop_map(|(x, s, zero_point)| DequantizeCase {
            p: DequantizeParams {
                scale: s as f32,
                zero_point,
            },
            x,
        })
}

/// The table's Dequantize against its definition: the real value `scale * (x - zero_point)` rounded to
/// the nearest f32. Exactly.
pub fn check_dequantize(k: &Int8Kernels, c: &DequantizeCase) -> Result<(), TestCaseError> {
    let dims = [c.x.len()];
    prop_assert_eq!(dequantize::validate(&c.p, &dims, &dims), Ok(()));
    let got = run_elementwise(&c.x, f32::NAN, |x, y| (k.dequantize)(&c.p, x, y));
    for (i, (&g, &v)) in got.iter().zip(&c.x).enumerate() {
        // The product of a 24-bit mantissa and a 9-bit integer is exact in f64.
        let want = (f64::from(c.p.scale) * (f64::from(v) - f64::from(c.p.zero_point))) as f32;
        prop_assert_eq!(
            g.to_bits(),
            want.to_bits(),
            "output {}: {} vs {}",
            i,
            g,
            want
        );
    }
    Ok(())
}

/// Hand-computed elementwise cases.
pub fn known_elementwise(k: &Int8Kernels) {
    // Add, all scales 0.5 and zero points 0: plain integer sums. `a` [2, 1] broadcast against `b` [3].
    let p = QuantAddParams::from_scales((0.5, 0), (0.5, 0), (0.5, 0), i8::MIN, i8::MAX);
    assert_eq!((p.left_shift, p.a_multiplier, p.a_shift), (20, 1 << 30, 0));
    let mut y = [0i8; 6];
    (k.add)(
        &p,
        In {
            data: &[1, -100],
            dims: &[2, 1],
        },
        In {
            data: &[4, -6, 2],
            dims: &[3],
        },
        Out {
            data: &mut y,
            dims: &[2, 3],
        },
    );
    assert_eq!(y, [5, -5, 3, -96, -106, -98]);
    // Add with different scales and zero points: a = 0.1 * (q - 10), b = 0.2 * (q + 5), y = 0.25 * (q - 1).
    // a = 30 -> 2.0, b = 0 -> 1.0: 3.0 / 0.25 = 12 -> 13. a = 10 -> 0, b = -5 -> 0: 1 (the zero point).
    let p = QuantAddParams::from_scales((0.1, 10), (0.2, -5), (0.25, 1), i8::MIN, i8::MAX);
    (k.add)(
        &p,
        In {
            data: &[30, 10],
            dims: &[2],
        },
        In {
            data: &[0, -5],
            dims: &[2],
        },
        Out {
            data: &mut y[..2],
            dims: &[2],
        },
    );
    assert_eq!(y[..2], [13, 1]);

    // Mul: scales 0.5 and 0.5, output 0.25, zero points 0: integer products, saturating.
    let p = QuantMulParams::from_scales((0.5, 0), (0.5, 0), (0.25, 0), i8::MIN, i8::MAX);
    (k.mul)(
        &p,
        In {
            data: &[2, -3, 100],
            dims: &[3],
        },
        In {
            data: &[3, 4, 100],
            dims: &[3],
        },
        Out {
            data: &mut y[..3],
            dims: &[3],
        },
    );
    assert_eq!(y[..3], [6, -12, 127]);

    // Requantize by 1/2 with zero points 0: 3 -> 1.5 -> 2, 5 -> 2.5 -> 3, but -3 -> -1.5 -> -1: the
    // doubling high multiply rounds ties toward +infinity (TFLite's behaviour, kept bit for bit).
    let p = RequantizeParams::from_scales((1.0, 0), (2.0, 0));
    (k.requantize)(
        &p,
        In {
            data: &[3, 5, -3, -128],
            dims: &[4],
        },
        Out {
            data: &mut y[..4],
            dims: &[4],
        },
    );
    assert_eq!(y[..4], [2, 3, -1, -64]);

    // Quantize with scale 0.5 and zero point 10: ties 0.5, 2.5, -1.5 either way; NaN, overflow.
    let x = [0.25, 1.25, -0.75, f32::NAN, 1e9, f32::NEG_INFINITY];
    for (rounding, want) in [
        (Rounding::HalfAwayFromZero, [11, 13, 8, 10, 127, -128]),
        (Rounding::HalfToEven, [10, 12, 8, 10, 127, -128]),
    ] {
        let p = QuantizeParams {
            scale: 0.5,
            zero_point: 10,
            rounding,
        };
        let mut y = [0i8; 6];
        (k.quantize)(
            &p,
            In {
                data: &x,
                dims: &[6],
            },
            Out {
                data: &mut y,
                dims: &[6],
            },
        );
        assert_eq!(y, want, "{rounding:?}");
    }

    // Dequantize with scale 0.5 and zero point -1.
    let p = DequantizeParams {
        scale: 0.5,
        zero_point: -1,
    };
    let mut y = [0f32; 3];
    (k.dequantize)(
        &p,
        In {
            data: &[-128, 0, 127],
            dims: &[3],
        },
        Out {
            data: &mut y,
            dims: &[3],
        },
    );
    assert_eq!(y, [-63.5, 0.5, 64.0]);
}

/// `validate` rejects shapes that do not broadcast and parameters out of range.
pub fn validate_rejects_bad_params() {
    let ok = QuantAddParams::from_scales((0.1, 0), (0.2, 0), (0.3, 0), i8::MIN, i8::MAX);
    assert_eq!(add::validate(&ok, &[2, 3], &[3], &[2, 3]), Ok(()));
    assert!(add::validate(&ok, &[2, 3], &[2], &[2, 3]).is_err());
    assert!(add::validate(&ok, &[2, 3], &[3], &[3, 3]).is_err());
    let bad = [
        QuantAddParams {
            left_shift: 23,
            ..ok
        },
        QuantAddParams {
            left_shift: -1,
            ..ok
        },
        QuantAddParams { a_shift: 1, ..ok },
        QuantAddParams {
            b_multiplier: -1,
            ..ok
        },
        QuantAddParams { y_shift: -32, ..ok },
        // An output scale far too small for the inputs: its multiplier is not below 1.
        QuantAddParams::from_scales((1.0, 0), (1.0, 0), (1e-7, 0), i8::MIN, i8::MAX),
    ];
    for p in bad {
        assert!(add::validate(&p, &[3], &[3], &[3]).is_err(), "{p:?}");
    }

    let ok = QuantMulParams::from_scales((0.1, 0), (0.2, 0), (0.3, 0), i8::MIN, i8::MAX);
    assert_eq!(mul::validate(&ok, &[], &[4], &[4]), Ok(()));
    assert!(mul::validate(&ok, &[2], &[4], &[4]).is_err());
    assert!(mul::validate(&QuantMulParams { shift: 31, ..ok }, &[4], &[4], &[4]).is_err());
    assert!(mul::validate(
        &QuantMulParams {
            multiplier: -5,
            ..ok
        },
        &[4],
        &[4],
        &[4]
    )
    .is_err());

    let ok = RequantizeParams::from_scales((0.1, 0), (0.2, 3));
    assert_eq!(requantize::validate(&ok, &[2, 2], &[2, 2]), Ok(()));
    assert!(requantize::validate(&ok, &[2, 2], &[4]).is_err());
    assert!(requantize::validate(&RequantizeParams { shift: -40, ..ok }, &[4], &[4]).is_err());

    for s in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let q = QuantizeParams {
            scale: s,
            zero_point: 0,
            rounding: Rounding::HalfAwayFromZero,
        };
        assert!(quantize::validate(&q, &[2], &[2]).is_err(), "{s}");
        let d = DequantizeParams {
            scale: s,
            zero_point: 0,
        };
        assert!(dequantize::validate(&d, &[2], &[2]).is_err(), "{s}");
    }
    let q = QuantizeParams {
        scale: 1.0,
        zero_point: 0,
        rounding: Rounding::HalfToEven,
    };
    assert!(quantize::validate(&q, &[2], &[3]).is_err());
}
