//! Global average pooling, NHWC: `[N, H, W, C]` to `[N, 1, 1, C]`, as one window over the whole
//! image (see [`super`]): pixels summed in row-major order, then times `1 / (H W)`, as the reference.

use ember_core::ops::{In, Out};

use super::{pool_pixel, Window, SUM};
use crate::simd::{per_level, Simd};

per_level! {
    simd:
    fn global_avg_pool(x: In<'_>, y: Out<'_>) => global_avg_pool_on;
}

#[inline(always)]
fn global_avg_pool_on<S: Simd>(s: S, x: In<'_>, y: Out<'_>) {
    let (h, w, channels) = (x.dims[1], x.dims[2], x.dims[3]);
    if y.data.is_empty() || channels == 0 {
        return;
    }
    let window = Window {
        rows: (0, h),
        cols: (0, w),
        scale: Some(1.0 / (h * w) as f32),
    };
    let images = x.data.chunks_exact(h * w * channels);
    for (image, out) in images.zip(y.data.chunks_exact_mut(channels)) {
        pool_pixel::<S, SUM>(s, image, (w, channels), &window, out);
    }
}
