//! 2-D max pooling, NHWC (see [`super`]): the largest value of each window, NaN never winning (as
//! `f32::max` in the reference).

use ember_core::ops::pool::Pool2dParams;
use ember_core::ops::{In, Out};

use super::{pool2d, MAX};
use crate::simd::{per_level, Simd};

per_level! {
    simd:
    fn max_pool(p: &Pool2dParams, x: In<'_>, y: Out<'_>) => max_pool_on;
}

#[inline(always)]
fn max_pool_on<S: Simd>(s: S, p: &Pool2dParams, x: In<'_>, y: Out<'_>) {
    pool2d::<S, MAX>(s, p, x, y, |_| None);
}
