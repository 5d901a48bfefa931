//! int8 max and average pooling (input and output share their quantization).

use ember_core::ops::pool::Pool2dParams;
use ember_core::ops::quant::avg_pool::{self, QuantAvgPoolParams};
use ember_core::ops::quant::max_pool::{self, QuantMaxPoolParams};
use ember_core::ops::{In, Out};
use proptest::prelude::*;

use crate::edge::validate_agrees;
use crate::shape::run_into;
use crate::window::{covered, odd_pool, pool_is_valid, pool_params, valid_pool};

use super::{
    act_range, assert_within, clamp_lower_first, flat, int8_values, numel, requantize_real,
    zero_point, Int8Kernels,
};

/// A pooling window over an int8 NHWC input.
#[derive(Clone, Debug)]
pub struct PoolCase {
    window: Pool2dParams,
    zero_point: i8,
    act: (i8, i8),
    x_dims: [usize; 4],
    y_dims: [usize; 4],
    x: Vec<i8>,
}

impl PoolCase {
    fn avg_params(&self) -> QuantAvgPoolParams {
        QuantAvgPoolParams {
            window: self.window,
            zero_point: self.zero_point,
            act_min: self.act.0,
            act_max: self.act.1,
        }
    }

    fn max_params(&self) -> QuantMaxPoolParams {
        QuantMaxPoolParams {
            window: self.window,
            act_min: self.act.0,
            act_max: self.act.1,
        }
    }

    /// The input, as the kernels take it.
    fn input(&self) -> In<'_, i8> {
        In {
            data: &self.x,
            dims: &self.x_dims,
        }
    }

    fn run_avg(&self, k: &Int8Kernels) -> Vec<i8> {
        run_into(&self.y_dims, 0x55, |y| {
            (k.avg_pool)(&self.avg_params(), self.input(), y)
        })
    }

    fn run_max(&self, k: &Int8Kernels) -> Vec<i8> {
        run_into(&self.y_dims, 0x55, |y| {
            (k.max_pool)(&self.max_params(), self.input(), y)
        })
    }
}

fn pool_with_values(
    window: Pool2dParams,
    x_dims: [usize; 4],
    y_dims: [usize; 4],
) -> impl Strategy<Value = PoolCase> {
    let zp = zero_point().prop_flat_map(|zp| (Just(zp), act_range(zp)));
    (int8_values(numel(&x_dims)), zp).prop_map(move |(x, (zero_point, act))| PoolCase {
        window,
        zero_point,
        act,
        x_dims,
        y_dims,
        x,
    })
}

/// A valid pool ([`valid_pool`]) with values, a zero point and an activation range.
pub fn pool_case() -> impl Strategy<Value = PoolCase> {
    valid_pool().prop_flat_map(|(p, x_dims, y_dims)| pool_with_values(p, x_dims, y_dims))
}

/// The definitions: max pooling's exact output; average pooling by TFLite's integer arithmetic (sum,
/// padding cells as the zero point when counted, divided with ties away from zero) and by the real mean
/// requantized.
fn pool_definitions(c: &PoolCase) -> (Vec<i8>, Vec<i8>, Vec<i8>) {
    let p = &c.window;
    let [n, h, w, ch] = c.x_dims;
    let [_, oh, ow, _] = c.y_dims;
    let (act_min, act_max) = c.act;
    let (mut max, mut avg_tflite, mut avg_real) = (Vec::new(), Vec::new(), Vec::new());
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for ci in 0..ch {
                    let mut best = i64::MIN;
                    let (mut sum, mut cells) = (0i64, 0i64);
                    for iy in covered(oy, p.kernel_h, p.stride_h, p.pad_top, h) {
                        for ix in covered(ox, p.kernel_w, p.stride_w, p.pad_left, w) {
                            let v = i64::from(c.x[flat(&[b, iy, ix, ci], &c.x_dims)]);
                            best = best.max(v);
                            sum += v;
                            cells += 1;
                        }
                    }
                    max.push(clamp_lower_first(best, act_min, act_max));
                    let zp = i64::from(c.zero_point);
                    let (sum, count) = if p.count_include_pad {
                        let full = i64::from(p.kernel_h) * i64::from(p.kernel_w);
                        (sum + (full - cells) * zp, full)
                    } else {
                        (sum, cells)
                    };
                    let mean = (sum as f64 / count as f64).round() as i64;
                    avg_tflite.push(clamp_lower_first(mean, act_min, act_max));
                    // The real mean of (q - zp) * scale, requantized with the same scale (1 here).
                    let real = (sum - count * zp) as f64 / count as f64;
                    avg_real.push(requantize_real(real, 1.0, c.zero_point, act_min, act_max));
                }
            }
        }
    }
    (max, avg_tflite, avg_real)
}

/// The table's pooling kernels against the definitions: max exactly, average exactly against TFLite's
/// arithmetic and within 1 LSB of the real mean.
pub fn check_pools(k: &Int8Kernels, c: &PoolCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        max_pool::validate(&c.max_params(), &c.x_dims, &c.y_dims),
        Ok(())
    );
    prop_assert_eq!(
        avg_pool::validate(&c.avg_params(), &c.x_dims, &c.y_dims),
        Ok(())
    );
    let (max, avg_tflite, avg_real) = pool_definitions(c);
    assert_within(&c.run_max(k), &max, 0)?;
    let avg = c.run_avg(k);
    assert_within(&avg, &avg_tflite, 0)?;
    assert_within(&avg, &avg_real, 1)
}

/// Odd pools: any dim or window size may be 0, paddings may exceed the window, one output dim may be off
/// by one.
pub fn pool_edge_case() -> impl Strategy<Value = PoolCase> {
    let small = |max: u16| prop_oneof![8 => 1u16..=max, 1 => Just(0u16)];
    let dims = prop::array::uniform4(small(4).prop_map(usize::from));
    let sizes = (small(3), small(3), small(3), small(3));
    let pads = prop::array::uniform4(prop_oneof![4 => 0u16..=1, 1 => 2u16..=3]);
    let off_by_one = prop::option::weighted(0.1, 0usize..4);
    (dims, sizes, pads, off_by_one, any::<bool>()).prop_flat_map(
        |(x_dims, window, pads, off_by_one, include_pad)| {
            let (p, y_dims) = odd_pool(x_dims, window, pads, off_by_one, include_pad);
            pool_with_values(p, x_dims, y_dims)
        },
    )
}

/// `validate` agrees with the definition on odd pools, and whatever it accepts runs without panicking
/// and matches the definitions.
pub fn check_pool_edge(k: &Int8Kernels, c: &PoolCase) -> Result<(), TestCaseError> {
    let verdict = max_pool::validate(&c.max_params(), &c.x_dims, &c.y_dims);
    prop_assert_eq!(
        verdict,
        avg_pool::validate(&c.avg_params(), &c.x_dims, &c.y_dims)
    );
    if validate_agrees(&verdict, pool_is_valid(&c.window, c.x_dims, c.y_dims))? {
        let (max, avg, _) = pool_definitions(c);
        assert_within(&c.run_max(k), &max, 0)?;
        assert_within(&c.run_avg(k), &avg, 0)?;
    }
    Ok(())
}

/// Hand-computed pools.
pub fn known_pools(k: &Int8Kernels) {
    // 2x2 input [1 2; 4 -6], one channel, 2x2 window: max 4; average 1 / 4 = 0.25 -> 0.
    // With padding 1 on every side and a 2x2 window, stride 2, the corner windows each see one cell.
    let x = [1i8, 2, 4, -6];
    let x_dims = [1, 2, 2, 1];
    let run = |p: Pool2dParams, zero_point: i8, y_dims: [usize; 4]| {
        let mut max = vec![0i8; numel(&y_dims)];
        let mut avg = max.clone();
        let (act_min, act_max) = (i8::MIN, i8::MAX);
        (k.max_pool)(
            &QuantMaxPoolParams {
                window: p,
                act_min,
                act_max,
            },
            In {
                data: &x,
                dims: &x_dims,
            },
            Out {
                data: &mut max,
                dims: &y_dims,
            },
        );
        let avg_p = QuantAvgPoolParams {
            window: p,
            zero_point,
            act_min,
            act_max,
        };
        assert_eq!(avg_pool::validate(&avg_p, &x_dims, &y_dims), Ok(()));
        (k.avg_pool)(
            &avg_p,
            In {
                data: &x,
                dims: &x_dims,
            },
            Out {
                data: &mut avg,
                dims: &y_dims,
            },
        );
        (max, avg)
    };
    let p = pool_params((2, 2), (1, 1), [0; 4], false);
    assert_eq!(run(p, 0, [1, 1, 1, 1]), (vec![4], vec![0]));
    // Ties round away from zero: rows [1, 2] average 1.5 -> 2 and [4, -6] -1; columns [1, 4] 2.5 -> 3
    // and [2, -6] -2.
    let p = pool_params((1, 2), (1, 1), [0; 4], false);
    assert_eq!(run(p, 0, [1, 2, 1, 1]), (vec![2, 4], vec![2, -1]));
    let p = pool_params((2, 1), (1, 1), [0; 4], false);
    assert_eq!(run(p, 0, [1, 1, 2, 1]), (vec![4, 2], vec![3, -2]));
    // Padding: without count_include_pad the corner cell alone; with it, three padding cells holding the
    // zero point 3: (1 + 9) / 4 = 2.5 -> 3, (2 + 9) / 4 = 2.75 -> 3, (4 + 9) / 4 = 3.25 -> 3,
    // (-6 + 9) / 4 = 0.75 -> 1.
    let p = pool_params((2, 2), (2, 2), [1; 4], false);
    assert_eq!(
        run(p, 3, [1, 2, 2, 1]),
        (vec![1, 2, 4, -6], vec![1, 2, 4, -6])
    );
    let p = pool_params((2, 2), (2, 2), [1; 4], true);
    assert_eq!(run(p, 3, [1, 2, 2, 1]).1, vec![3, 3, 3, 1]);
}

/// `validate` rejects windows that are empty or too large and outputs of the wrong shape.
pub fn validate_rejects_bad_windows() {
    let ok = QuantAvgPoolParams {
        window: pool_params((2, 2), (1, 1), [0; 4], false),
        zero_point: 0,
        act_min: i8::MIN,
        act_max: i8::MAX,
    };
    assert_eq!(
        avg_pool::validate(&ok, &[1, 3, 3, 2], &[1, 2, 2, 2]),
        Ok(())
    );
    assert!(avg_pool::validate(&ok, &[1, 3, 3, 2], &[1, 2, 2, 3]).is_err());
    let zero_stride = QuantAvgPoolParams {
        window: pool_params((2, 2), (0, 1), [0; 4], false),
        ..ok
    };
    assert!(avg_pool::validate(&zero_stride, &[1, 3, 3, 2], &[1, 2, 2, 2]).is_err());
    // A 4096 x 4096 window could overflow the int32 sum.
    let huge = QuantAvgPoolParams {
        window: pool_params((4096, 4096), (1, 1), [0; 4], false),
        ..ok
    };
    assert!(avg_pool::validate(&huge, &[1, 4096, 4096, 1], &[1, 1, 1, 1]).is_err());
    let max = QuantMaxPoolParams {
        window: pool_params((2, 2), (1, 1), [2, 0, 0, 0], false),
        act_min: i8::MIN,
        act_max: i8::MAX,
    };
    // The first window lies entirely in the padding.
    assert!(max_pool::validate(&max, &[1, 3, 3, 1], &[1, 4, 2, 1]).is_err());
}
