//! int8 softmax (output scale 1/256, zero point -128) against the real softmax.

use ember_core::ops::quant::softmax::{self, QuantSoftmaxParams};
use ember_core::ops::{In, Out};
use proptest::prelude::*;

use super::{assert_within, flat, int8_values, numel, scale, Int8Kernels};

/// A softmax over one axis of an int8 tensor quantized with `x_scale`.
#[derive(Clone, Debug)]
pub struct SoftmaxCase {
    beta: f64,
    x_scale: f64,
    axis: u8,
    dims: Vec<usize>,
    x: Vec<i8>,
}

impl SoftmaxCase {
    fn params(&self) -> QuantSoftmaxParams {
        QuantSoftmaxParams::from_scale(self.beta, self.x_scale, self.axis)
    }
}

/// Rank 1 to 3, the axis 1 to 40 long (now and then up to 300), other dims 1 to 3 (now and then 0);
/// input scales from 1/100 to 1, beta 1 or 0.5 to 2; values spread over the range or clustered.
pub fn softmax_case() -> impl Strategy<Value = SoftmaxCase> {
    let other = prop_oneof![10 => 1usize..=3, 1 => Just(0usize)];
    let axis_len = prop_oneof![8 => 1usize..=40, 1 => 41usize..=300];
    let beta = prop_oneof![Just(1.0), 0.5f64..2.0];
    (
        proptest::collection::vec(other, 1..=3),
        axis_len,
        any::<prop::sample::Index>(),
        beta,
        scale(0.01, 1.0),
        any::<bool>(),
    )
        .prop_flat_map(|(mut dims, len, axis, beta, x_scale, clustered)| {
            let axis = axis.index(dims.len());
            dims[axis] = len;
            let n = numel(&dims);
            let values = if clustered {
                (any::<i8>(), proptest::collection::vec(-20i8..=0, n))
                    .prop_map(|(top, d)| d.iter().map(|&d| top.saturating_add(d)).collect())
                    .boxed()
            } else {
                int8_values(n).boxed()
            };
            values.prop_map(move |x| SoftmaxCase {
                beta,
                x_scale,
                axis: axis as u8,
                dims: dims.clone(),
                x,
            })
        })
}

/// The real softmax of the dequantized input, quantized to scale 1/256 and zero point -128 (ties away
/// from zero), saturated.
fn softmax_definition(c: &SoftmaxCase) -> Vec<i8> {
    let axis = usize::from(c.axis);
    let len = c.dims[axis];
    let mut y = vec![0i8; c.x.len()];
    for (position, out) in y.iter_mut().enumerate() {
        let mut index = vec![0; c.dims.len()];
        let mut rest = position;
        for (i, &d) in c.dims.iter().enumerate().rev() {
            index[i] = rest % d;
            rest /= d;
        }
        let lane: Vec<f64> = (0..len)
            .map(|j| {
                let mut at = index.clone();
                at[axis] = j;
                f64::from(c.x[flat(&at, &c.dims)])
            })
            .collect();
        let max = lane.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = lane
            .iter()
            .map(|&v| (c.beta * c.x_scale * (v - max)).exp())
            .sum();
        let v = f64::from(c.x[position]);
        let p = (c.beta * c.x_scale * (v - max)).exp() / sum;
        *out = ((p * 256.0).round() as i64 - 128).clamp(-128, 127) as i8;
    }
    y
}

fn run(k: &Int8Kernels, p: &QuantSoftmaxParams, x: &[i8], dims: &[usize]) -> Vec<i8> {
    assert_eq!(softmax::validate(p, dims, dims), Ok(()));
    let mut y = vec![0x55; x.len()];
    (k.softmax)(p, In { data: x, dims }, Out { data: &mut y, dims });
    y
}

/// The table's softmax within 1 LSB of the real softmax.
pub fn check_softmax(k: &Int8Kernels, c: &SoftmaxCase) -> Result<(), TestCaseError> {
    let p = c.params();
    prop_assert_eq!(softmax::validate(&p, &c.dims, &c.dims), Ok(()));
    let mut got = vec![0x55; c.x.len()];
    (k.softmax)(
        &p,
        In {
            data: &c.x,
            dims: &c.dims,
        },
        Out {
            data: &mut got,
            dims: &c.dims,
        },
    );
    assert_within(&got, &softmax_definition(c), 1)
}

/// Hand-computed softmaxes.
pub fn known_softmax(k: &Int8Kernels) {
    let p = QuantSoftmaxParams::from_scale(1.0, 0.1, 0);
    // One element: probability 1, saturated to 127.
    assert_eq!(run(k, &p, &[17], &[1]), [127]);
    // Equal values: 1/2 is 0, 1/4 is -64.
    assert_eq!(run(k, &p, &[5, 5], &[2]), [0, 0]);
    assert_eq!(run(k, &p, &[-9; 4], &[4]), [-64; 4]);
    // A gap of 255 steps of 0.1: exp(-25.5) is far below 1/512.
    assert_eq!(run(k, &p, &[127, -128], &[2]), [127, -128]);
    // exp(-ln 3) = 1/3: with scale ln(3) / 10 and a gap of 10 steps, [3/4, 1/4] = [64, -64].
    let p = QuantSoftmaxParams::from_scale(1.0, 3f64.ln() / 10.0, 0);
    assert_eq!(run(k, &p, &[0, -10], &[2]), [64, -64]);
    // Along axis 0 of [2, 2]: lanes are columns.
    let p = QuantSoftmaxParams::from_scale(1.0, 3f64.ln() / 10.0, 0);
    assert_eq!(run(k, &p, &[0, 7, -10, 7], &[2, 2]), [64, 0, -64, 0]);
}

/// `validate` rejects bad axes, shapes and parameters.
pub fn validate_rejects_bad_params() {
    let ok = QuantSoftmaxParams::from_scale(1.0, 0.1, 1);
    assert!(ok.input_left_shift >= 0 && ok.diff_min < 0, "{ok:?}");
    assert_eq!(softmax::validate(&ok, &[2, 10], &[2, 10]), Ok(()));
    assert!(softmax::validate(&ok, &[10], &[10]).is_err()); // axis 1 of a rank-1 tensor
    assert!(softmax::validate(&ok, &[2, 10], &[2, 11]).is_err());
    assert!(softmax::validate(&ok, &[1, 4096], &[1, 4096]).is_err()); // the Q12.19 sum could overflow
    assert_eq!(softmax::validate(&ok, &[1, 4095], &[1, 4095]), Ok(()));
    let bad = [
        QuantSoftmaxParams {
            input_multiplier: -1,
            ..ok
        },
        QuantSoftmaxParams {
            input_left_shift: 32,
            ..ok
        },
        QuantSoftmaxParams {
            input_left_shift: -1,
            ..ok
        },
        QuantSoftmaxParams { diff_min: 1, ..ok },
        // -2 << 31 does not fit in int32.
        QuantSoftmaxParams {
            input_left_shift: 31,
            diff_min: -2,
            ..ok
        },
    ];
    for p in bad {
        assert!(softmax::validate(&p, &[2, 10], &[2, 10]).is_err(), "{p:?}");
    }
}

/// TFLM's parameters for a common case: beta 1, input scale 1/16 (a typical logits scale).
pub fn params_match_tflm_prepare() {
    // beta * scale * 2^26 = 2^22: multiplier 2^30 with left shift 23; radius 31 * 2^26 / 2^23 = 248.
    let p = QuantSoftmaxParams::from_scale(1.0, 1.0 / 16.0, 0);
    assert_eq!(
        (p.input_multiplier, p.input_left_shift, p.diff_min),
        (1 << 30, 23, -248)
    );
}
