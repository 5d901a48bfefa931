//! Global average pooling, NHWC: `[N, H, W, C]` to `[N, 1, 1, C]`.

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// Checks `x` `[N, H, W, C]` with `H, W > 0` (a mean over nothing is undefined) and `y` `[N, 1, 1, C]`.
pub fn validate(x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(x.len() == 4, "global pool input is not [N, H, W, C]")?;
    ensure(x[1] > 0 && x[2] > 0, "global pool input has H or W of 0")?;
    ensure(
        y == [x[0], 1, 1, x[3]],
        "global pool output is not [N, 1, 1, C]",
    )
}

/// `y[n, 0, 0, c]` = mean of `x[n, :, :, c]`.
pub fn global_avg_pool(x: In<'_>, y: Out<'_>) {
    let (area, channels) = (x.dims[1] * x.dims[2], x.dims[3]);
    if y.data.is_empty() {
        return;
    }
    let scale = 1.0 / area as f32;
    let images = x.data.chunks_exact(area * channels);
    for (image, out) in images.zip(y.data.chunks_exact_mut(channels)) {
        out.fill(0.0);
        for pixel in image.chunks_exact(channels) {
            for (acc, &v) in out.iter_mut().zip(pixel) {
                *acc += v;
            }
        }
        for v in out.iter_mut() {
            *v *= scale;
        }
    }
}

/// Signature of a global pooling kernel.
pub type GlobalPoolFn = fn(In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::global_avg_pool`](crate::Kernels::global_avg_pool) entry, which runs
    /// [`OpKind::GlobalAvgPool`](crate::OpKind::GlobalAvgPool).
    GlobalAvgPool: GlobalPoolFn = global_avg_pool, (), F32;
    validate |_, o| shape_reason(validate(o.dims(0), o.out_dims()));
    run |kernel, _, a| kernel(a.x(0)?, out(a.y)?);
}
