//! 2-D average pooling, NHWC (see [`super`]): each window's sum times `1 / count`, `count` the full
//! window with `count_include_pad`, else the cells inside the input (as ONNX and the reference).

use ember_core::ops::pool::Pool2dParams;
use ember_core::ops::{In, Out};

use super::{pool2d, SUM};
use crate::simd::{per_level, Simd};

per_level! {
    simd:
    fn avg_pool(p: &Pool2dParams, x: In<'_>, y: Out<'_>) => avg_pool_on;
}

#[inline(always)]
fn avg_pool_on<S: Simd>(s: S, p: &Pool2dParams, x: In<'_>, y: Out<'_>) {
    let full_window = usize::from(p.kernel_h) * usize::from(p.kernel_w);
    let include_pad = p.count_include_pad;
    pool2d::<S, SUM>(s, p, x, y, |cells| {
        let count = if include_pad { full_window } else { cells };
        Some(1.0 / count as f32)
    });
}
