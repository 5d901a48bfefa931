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
    if len < 32 {
        // Short rows: the vector loops' fixed work per row (a block of accumulators, the padded tail)
        // costs more than the row. Measured on AVX2 (`elementwise_bench LayerNorm`): rows of 6 values
        // 15 ns per value against the reference loop's 2.1, rows of 30 3.0 against 1.5; from rows of
        // 48 the vectors win (0.9 against 1.4). The reference's loop is this kernel's arithmetic.
        return ember_core::ops::nn::layer_norm::layer_norm(p, x, scale, bias, y);
    }
    let n = len as f32;
    let zero = s.splat(0.0);
    // Each closure is written where it is passed: one closure value passed to several loops is called
    // from several places, and LLVM then left it out of line, compiled without the level's features
    // (rows of 30 values ran 3x slower on AVX2 than on SSE2).
    for (row, out) in x.data.chunks_exact(len).zip(y.data.chunks_exact_mut(len)) {
        let sum = |a, b| s.add(a, b);
        let mean = s.sum(fold(s, row, zero, 0.0, sum, |a, b| s.add(a, b))) / n;
        let m = s.splat(mean);
        // Padding lanes hold the mean: they add 0.
        let square = |acc, v| {
            let d = s.sub(v, m);
            s.add(acc, s.mul(d, d))
        };
        let var = s.sum(fold(s, row, zero, mean, square, |a, b| s.add(a, b))) / n;
        // The level's square root, not `libm::sqrtf`: that is an inline `sqrtss`, whose legacy SSE
        // encoding inside AVX code cost Intel cores (Sapphire Rapids) a state transition per row:
        // rows of 30 values ran 3x slower than on SSE2. Both are IEEE square roots: the same value.
        let inv_std = s.div(s.splat(1.0), s.sqrt(s.splat(var + p.epsilon)));
        zip(
            s,
            Operand::Run(row),
            Operand::Run(scale.data),
            out,
            |v, g| s.mul(s.mul(s.sub(v, m), inv_std), g),
        );
        // No bias adds 0.0, as the reference does (it turns -0 into 0).
        let bias = bias.map_or(Operand::Repeat(0.0), Operand::Run);
        update(s, out, bias, |v, b| s.add(v, b));
    }
}
