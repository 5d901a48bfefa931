//! Layer normalization over the trailing axes, vectorized along each normalized row: the mean and the
//! variance as vector sums (in another order than the reference's loop), then
//! `((x - mean) * inv_std) * scale + bias` element by element in the reference's order.

use ember_core::ops::nn::layer_norm::LayerNormParams;
use ember_core::ops::{numel, In, Out};

use crate::simd::{fold, per_level, update, zip, Operand, Simd};

per_level! {
    simd:
    fn layer_norm(
        p: &LayerNormParams,
        x: In<'_>,
        scale: In<'_>,
        bias: Option<&[f32]>,
        y: Out<'_>,
    ) => layer_norm_on;
}

#[inline(always)]
fn layer_norm_on<S: Simd>(
    s: S,
    p: &LayerNormParams,
    x: In<'_>,
    scale: In<'_>,
    bias: Option<&[f32]>,
    y: Out<'_>,
) {
    let len = numel(&x.dims[usize::from(p.axis)..]);
    if len == 0 || y.data.is_empty() {
        return;
    }
    let n = len as f32;
    let zero = s.splat(0.0);
    let add = |a, b| s.add(a, b);
    for (row, out) in x.data.chunks_exact(len).zip(y.data.chunks_exact_mut(len)) {
        let mean = s.sum(fold(s, row, zero, 0.0, add, add)) / n;
        let m = s.splat(mean);
        // Padding lanes hold the mean: they add 0.
        let square = |acc, v| {
            let d = s.sub(v, m);
            s.add(acc, s.mul(d, d))
        };
        let var = s.sum(fold(s, row, zero, mean, square, add)) / n;
        let inv_std = s.splat(1.0 / libm::sqrtf(var + p.epsilon));
        zip(
            s,
            Operand::Run(row),
            Operand::Run(scale.data),
            out,
            |v, g| s.mul(s.mul(s.sub(v, m), inv_std), g),
        );
        // No bias adds 0.0, as the reference does (it turns -0 into 0).
        let bias = bias.map_or(Operand::Repeat(0.0), Operand::Run);
        update(s, out, bias, add);
    }
}
