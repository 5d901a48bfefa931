//! RMS normalization over the trailing axes: `y = x / sqrt(mean(x^2) + epsilon) * scale`, the mean
//! taken over `x.dims[axis..]` (ONNX `RMSNormalization`, opset 23; the normalization of LLaMA-style
//! transformers, a layer normalization without the mean's subtraction and without a bias).

pub use crate::schema::nn::rms_norm::RmsNormParams;

use crate::ops::entry::{dims_of_first, op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{numel, In, Out};
use crate::Error;

/// Checks `axis < rank`, `scale` shaped `x.dims[axis..]`, and `y` shaped like `x`.
pub fn validate(p: &RmsNormParams, x: &[usize], scale: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    let axis = usize::from(p.axis);
    ensure(axis < x.len(), "RMS norm axis is not below the rank")?;
    ensure(
        scale == &x[axis..],
        "RMS norm scale is not shaped x.dims[axis..]",
    )?;
    ensure(x == y, "RMS norm output shape differs from input")
}

/// Normalizes each row of `numel(dims[axis..])` elements; with an empty row nothing is written.
pub fn rms_norm(p: &RmsNormParams, x: In<'_>, scale: In<'_>, y: Out<'_>) {
    let len = numel(&x.dims[usize::from(p.axis)..]);
    if len == 0 || y.data.is_empty() {
        return;
    }
    for (row, out) in x.data.chunks_exact(len).zip(y.data.chunks_exact_mut(len)) {
        let mean_square = row.iter().map(|&v| v * v).sum::<f32>() / len as f32;
        let rms = libm::sqrtf(mean_square + p.epsilon);
        for ((o, &v), &s) in out.iter_mut().zip(row).zip(scale.data) {
            *o = v / rms * s;
        }
    }
}

/// Signature of an RMS normalization kernel (`x, scale`).
pub type RmsNormFn = fn(&RmsNormParams, In<'_>, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::rms_norm`](crate::Kernels::rms_norm) entry, which runs
    /// [`OpKind::RmsNorm`](crate::OpKind::RmsNorm).
    RmsNorm: RmsNormFn = rms_norm, RmsNormParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.dims(1), o.out_dims()));
    infer |_p, x| dims_of_first(x);
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, out(a.y)?);
}

#[cfg(test)]
mod tests {
    use alloc::{vec, vec::Vec};

    use proptest::prelude::*;

    use super::*;

    /// The definition, in f64: each row divided by the root of its mean square plus epsilon, times
    /// the scale.
    fn naive(x: &[f32], scale: &[f32], epsilon: f32) -> Vec<f64> {
        x.chunks(scale.len())
            .flat_map(|row| {
                let ms = row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / row.len() as f64;
                let rms = (ms + f64::from(epsilon)).sqrt();
                row.iter()
                    .zip(scale)
                    .map(move |(&v, &s)| f64::from(v) / rms * f64::from(s))
            })
            .collect()
    }

    fn case() -> impl Strategy<Value = (Vec<usize>, u8, Vec<f32>, Vec<f32>)> {
        (prop::collection::vec(1usize..5, 1..4), any::<prop::sample::Index>()).prop_flat_map(
            |(dims, axis)| {
                let axis = axis.index(dims.len());
                let (n, inner) = (numel(&dims), numel(&dims[axis..]));
                (
                    Just(dims),
                    Just(axis as u8),
                    prop::collection::vec(-4.0f32..4.0, n),
                    prop::collection::vec(-2.0f32..2.0, inner),
                )
            },
        )
    }

    proptest! {
        #[test]
        fn matches_the_definition((dims, axis, x, scale) in case(), epsilon in 1e-6f32..1e-1) {
            let p = RmsNormParams { axis, epsilon };
            validate(&p, &dims, &dims[usize::from(axis)..], &dims).unwrap();
            let mut y = vec![f32::NAN; x.len()];
            let scale_dims = &dims[usize::from(axis)..];
            rms_norm(
                &p,
                In { data: &x, dims: &dims },
                In { data: &scale, dims: scale_dims },
                Out { data: &mut y, dims: &dims },
            );
            for (got, want) in y.iter().zip(naive(&x, &scale, epsilon)) {
                prop_assert!((f64::from(*got) - want).abs() <= 1e-5 * (1.0 + want.abs()), "{got} vs {want}");
            }
        }
    }

    #[test]
    fn a_scale_or_output_of_another_shape_is_refused() {
        let p = RmsNormParams {
            axis: 1,
            epsilon: 1e-5,
        };
        assert!(validate(&p, &[2, 3], &[2, 3], &[2, 3]).is_err());
        assert!(validate(&p, &[2, 3], &[3], &[3, 2]).is_err());
        let p = RmsNormParams { axis: 2, ..p };
        assert!(validate(&p, &[2, 3], &[], &[2, 3]).is_err());
    }
}
