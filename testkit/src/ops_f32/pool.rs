//! Pooling kernels: max, average (both `count_include_pad` modes), global average.

use ember_core::ops::pool::{avg_pool, global_avg_pool, max_pool, Pool2dParams};
use ember_core::ops::{In, Out};
use ember_core::{Error, Kernels};
use proptest::prelude::*;

use crate::edge::validate_agrees;
use crate::window::{covered, odd_pool, pool_is_valid, valid_pool};

use super::{
    assert_close, assert_known, dim, flat, mostly_positive, numel, odd_padding, values, Want,
};
use crate::shape::run_into;

/// A pooling window over an NHWC input.
#[derive(Clone, Debug)]
pub struct PoolCase {
    p: Pool2dParams,
    x_dims: [usize; 4],
    y_dims: [usize; 4],
    x: Vec<f32>,
}

impl PoolCase {
    fn run(&self, kernel: ember_core::ops::pool::Pool2dFn) -> Vec<f32> {
        let mut y = vec![f32::NAN; numel(&self.y_dims)];
        let x = In {
            data: &self.x,
            dims: &self.x_dims,
        };
        kernel(
            &self.p,
            x,
            Out {
                data: &mut y,
                dims: &self.y_dims,
            },
        );
        y
    }
}

fn pool_with_values(
    p: Pool2dParams,
    x_dims: [usize; 4],
    y_dims: [usize; 4],
) -> impl Strategy<Value = PoolCase> {
    values(numel(&x_dims)).prop_map(move |x| PoolCase {
        p,
        x_dims,
        y_dims,
        x,
    })
}

/// A valid pool ([`valid_pool`]) with values.
pub fn pool_case() -> impl Strategy<Value = PoolCase> {
    valid_pool().prop_flat_map(|(p, x_dims, y_dims)| pool_with_values(p, x_dims, y_dims))
}

/// Max and average pooling by their definitions: the maximum over the input cells of each window, and
/// their sum divided by the full window (`count_include_pad`) or by their number.
fn pool_definition(c: &PoolCase) -> (Vec<Want>, Vec<Want>) {
    let p = &c.p;
    let [n, h, w, ch] = c.x_dims;
    let [_, oh, ow, _] = c.y_dims;
    let mut max = Vec::new();
    let mut avg = Vec::new();
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for ci in 0..ch {
                    let mut best = f64::NEG_INFINITY;
                    let mut sum = Want::exact(0.0);
                    let mut count = 0usize;
                    for iy in covered(oy, p.kernel_h, p.stride_h, p.pad_top, h) {
                        for ix in covered(ox, p.kernel_w, p.stride_w, p.pad_left, w) {
                            let v = f64::from(c.x[flat(&[b, iy, ix, ci], &c.x_dims)]);
                            best = best.max(v);
                            sum.value += v;
                            sum.magnitude += v.abs();
                            count += 1;
                        }
                    }
                    max.push(Want::exact(best));
                    let divisor = if p.count_include_pad {
                        usize::from(p.kernel_h) * usize::from(p.kernel_w)
                    } else {
                        count
                    } as f64;
                    avg.push(Want {
                        value: sum.value / divisor,
                        magnitude: sum.magnitude / divisor,
                    });
                }
            }
        }
    }
    (max, avg)
}

/// The table's max pool against the definition.
pub fn check_max_pool(k: &Kernels, c: &PoolCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(max_pool::validate(&c.p, &c.x_dims, &c.y_dims), Ok(()));
    assert_close(&c.run(k.max_pool), &pool_definition(c).0)
}

/// The table's average pool against the definition.
pub fn check_avg_pool(k: &Kernels, c: &PoolCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(avg_pool::validate(&c.p, &c.x_dims, &c.y_dims), Ok(()));
    assert_close(&c.run(k.avg_pool), &pool_definition(c).1)
}

/// Odd pools: any dim may be 0, window and stride may be 0, paddings may exceed the window, and one
/// output dim may be off by one.
pub fn pool_edge_case() -> impl Strategy<Value = PoolCase> {
    let dims = prop::array::uniform4(mostly_positive(4).prop_map(usize::from));
    let p = mostly_positive;
    let window = (p(3), p(3), p(3), p(3));
    let pads = prop::array::uniform4(odd_padding());
    let off_by_one = prop::option::weighted(0.1, 0usize..4);
    (dims, window, pads, off_by_one, any::<bool>()).prop_flat_map(
        |(x_dims, window, pads, off_by_one, include_pad)| {
            let (p, y_dims) = odd_pool(x_dims, window, pads, off_by_one, include_pad);
            pool_with_values(p, x_dims, y_dims)
        },
    )
}

/// `validate` agrees with the definition on odd pools, and whatever it accepts runs without panicking
/// and matches the definition (max never returns a padding value or -inf).
pub fn check_pool_edge(k: &Kernels, c: &PoolCase) -> Result<(), TestCaseError> {
    let verdict = max_pool::validate(&c.p, &c.x_dims, &c.y_dims);
    prop_assert_eq!(verdict, avg_pool::validate(&c.p, &c.x_dims, &c.y_dims));
    if validate_agrees(&verdict, pool_is_valid(&c.p, c.x_dims, c.y_dims))? {
        let (max, avg) = pool_definition(c);
        assert_close(&c.run(k.max_pool), &max)?;
        assert_close(&c.run(k.avg_pool), &avg)?;
    }
    Ok(())
}

/// A global average pool over `[N, H, W, C]`.
#[derive(Clone, Debug)]
pub struct GlobalPoolCase {
    x_dims: [usize; 4],
    x: Vec<f32>,
}

/// N and C small (now and then 0), H and W 1 to 5.
pub fn global_avg_pool_case() -> impl Strategy<Value = GlobalPoolCase> {
    (dim(), 1usize..=5, 1usize..=5, dim())
        .prop_flat_map(|(n, h, w, c)| (Just([n, h, w, c]), values(n * h * w * c)))
        .prop_map(|(x_dims, x)| GlobalPoolCase { x_dims, x })
}

fn run_global_avg_pool(k: &Kernels, x: &[f32], x_dims: &[usize; 4]) -> Vec<f32> {
    let y_dims = [x_dims[0], 1, 1, x_dims[3]];
    assert_eq!(global_avg_pool::validate(x_dims, &y_dims), Ok(()));
    run_into(&y_dims, f32::NAN, |y| {
        (k.global_avg_pool)(
            In {
                data: x,
                dims: x_dims,
            },
            y,
        )
    })
}

/// The table's global average pool against the mean over H and W.
pub fn check_global_avg_pool(k: &Kernels, c: &GlobalPoolCase) -> Result<(), TestCaseError> {
    let [n, h, w, ch] = c.x_dims;
    let mut want = Vec::new();
    for b in 0..n {
        for ci in 0..ch {
            let mut sum = Want::exact(0.0);
            for iy in 0..h {
                for ix in 0..w {
                    let v = f64::from(c.x[flat(&[b, iy, ix, ci], &c.x_dims)]);
                    sum.value += v;
                    sum.magnitude += v.abs();
                }
            }
            let area = (h * w) as f64;
            want.push(Want {
                value: sum.value / area,
                magnitude: sum.magnitude / area,
            });
        }
    }
    assert_close(&run_global_avg_pool(k, &c.x, &c.x_dims), &want)
}

/// Hand-computed pools.
pub fn known_pools(k: &Kernels) {
    // x = 1..9 as a 3x3 image; 2x2 windows, stride 1, one row of padding above and one column on the left:
    // a 3x3 output whose window (i, j) covers input rows i-1..=i and columns j-1..=j.
    let mut p = Pool2dParams {
        kernel_h: 2,
        kernel_w: 2,
        stride_h: 1,
        stride_w: 1,
        pad_top: 1,
        pad_left: 1,
        pad_bottom: 0,
        pad_right: 0,
        count_include_pad: false,
    };
    let x: Vec<f32> = (1..=9).map(|v| v as f32).collect();
    let case = |p, x| PoolCase {
        p,
        x_dims: [1, 3, 3, 1],
        y_dims: [1, 3, 3, 1],
        x,
    };
    assert_known(
        &case(p, x.clone()).run(k.max_pool),
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    );
    // Cells covered: 1 | 1,2 | 2,3 / 1,4 | 1,2,4,5 | 2,3,5,6 / 4,7 | 4,5,7,8 | 5,6,8,9
    let valid_mean = [1.0, 1.5, 2.5, 2.5, 3.0, 4.0, 5.5, 6.0, 7.0];
    assert_known(&case(p, x.clone()).run(k.avg_pool), &valid_mean);
    p.count_include_pad = true;
    // Same sums, always divided by 4: 1 | 3 | 5 / 5 | 12 | 16 / 11 | 24 | 28
    let full_mean = [0.25, 0.75, 1.25, 1.25, 3.0, 4.0, 2.75, 6.0, 7.0];
    assert_known(&case(p, x.clone()).run(k.avg_pool), &full_mean);
    // Padding never wins a max, even over negative values.
    let negative: Vec<f32> = x.iter().map(|v| -v).collect();
    let want = [-1.0, -1.0, -2.0, -1.0, -1.0, -2.0, -4.0, -4.0, -5.0];
    assert_known(&case(p, negative).run(k.max_pool), &want);

    // Global average of a [1, 2, 2, 2]: pixels (1, 10), (2, 20), (3, 30), (4, 40).
    let x = [1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0];
    assert_known(&run_global_avg_pool(k, &x, &[1, 2, 2, 2]), &[2.5, 25.0]);
}

/// `validate` rejects wrong ranks and shapes, empty windows, zero strides and windows lying entirely in
/// the padding.
pub fn pool_validate_rejects_bad_shapes() {
    let ok = Pool2dParams {
        kernel_h: 2,
        kernel_w: 2,
        stride_h: 2,
        stride_w: 2,
        pad_top: 0,
        pad_left: 0,
        pad_bottom: 0,
        pad_right: 0,
        count_include_pad: false,
    };
    let (x, y): (&[usize], &[usize]) = (&[1, 4, 5, 3], &[1, 2, 2, 3]);
    assert_eq!(max_pool::validate(&ok, x, y), Ok(()));
    let with = |f: fn(&mut Pool2dParams)| {
        let mut p = ok;
        f(&mut p);
        p
    };
    let bad_params = [
        with(|p| p.kernel_h = 0),
        with(|p| p.kernel_w = 0),
        with(|p| p.stride_h = 0),
        with(|p| p.stride_w = 0),
        with(|p| p.kernel_w = 6),  // window wider than the input
        with(|p| p.pad_right = 1), // OW becomes 3
    ];
    for p in bad_params {
        assert!(
            matches!(max_pool::validate(&p, x, y), Err(Error::Shape { .. })),
            "{p:?}"
        );
        assert!(
            matches!(avg_pool::validate(&p, x, y), Err(Error::Shape { .. })),
            "{p:?}"
        );
    }
    let bad_shapes: [(&[usize], &[usize]); 5] = [
        (&[4, 5, 3], y),
        (x, &[2, 2, 3]),
        (x, &[2, 2, 2, 3]),
        (x, &[1, 2, 2, 4]),
        (x, &[1, 1, 2, 3]),
    ];
    for (x, y) in bad_shapes {
        assert!(
            matches!(max_pool::validate(&ok, x, y), Err(Error::Shape { .. })),
            "{x:?} {y:?}"
        );
    }
    // 1x1 windows, stride 1, one padding row above: the first window is all padding.
    let one = Pool2dParams {
        kernel_h: 1,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        ..ok
    };
    let top = Pool2dParams { pad_top: 1, ..one };
    assert!(max_pool::validate(&top, &[1, 3, 3, 1], &[1, 4, 3, 1]).is_err());
    // One padding row below: the last window is all padding ...
    let bottom = Pool2dParams {
        pad_bottom: 1,
        ..one
    };
    assert!(max_pool::validate(&bottom, &[1, 3, 3, 1], &[1, 4, 3, 1]).is_err());
    // ... unless the stride skips it: H = 1, stride 2 gives one window, on the input row.
    let skip = Pool2dParams {
        stride_h: 2,
        ..bottom
    };
    assert_eq!(
        max_pool::validate(&skip, &[1, 1, 3, 1], &[1, 1, 3, 1]),
        Ok(())
    );
    // An empty image: every window is padding.
    let padded = Pool2dParams {
        pad_top: 1,
        pad_bottom: 1,
        kernel_h: 2,
        ..one
    };
    assert!(max_pool::validate(&padded, &[1, 0, 3, 1], &[1, 1, 3, 1]).is_err());
    // Huge paddings overflow instead of wrapping.
    let huge = usize::MAX - 1;
    let wide = Pool2dParams { pad_top: 2, ..one };
    assert!(max_pool::validate(&wide, &[1, huge, 1, 1], &[1, huge, 1, 1]).is_err());

    assert_eq!(
        global_avg_pool::validate(&[2, 3, 4, 5], &[2, 1, 1, 5]),
        Ok(())
    );
    let bad_global: [(&[usize], &[usize]); 5] = [
        (&[3, 4, 5], &[1, 1, 5]),
        (&[2, 3, 4, 5], &[2, 1, 5]),
        (&[2, 3, 4, 5], &[1, 1, 1, 5]),
        (&[2, 3, 4, 5], &[2, 1, 1, 4]),
        (&[2, 0, 4, 5], &[2, 1, 1, 5]), // mean over nothing
    ];
    for (x, y) in bad_global {
        assert!(
            matches!(global_avg_pool::validate(x, y), Err(Error::Shape { .. })),
            "{x:?} {y:?}"
        );
    }
}
