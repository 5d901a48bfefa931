//! Layer normalization over the trailing axes: `y = (x - mean) / sqrt(var + epsilon) * scale + bias`,
//! mean and (biased) variance taken over `x.dims[axis..]` (ONNX `LayerNormalization`, and
//! `InstanceNormalization` once the converter has reshaped its spatial dims into one trailing axis).

pub use crate::schema::nn::layer_norm::LayerNormParams;

use crate::ops::entry::{dims_of_first, op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{numel, In, Out};
use crate::Error;

/// Checks `axis < rank`, `scale` (and `bias`, if any) shaped `x.dims[axis..]`, and `y` shaped like `x`.
pub fn validate(
    p: &LayerNormParams,
    x: &[usize],
    scale: &[usize],
    bias: Option<&[usize]>,
    y: &[usize],
) -> Result<(), Error> {
    check_dims(x)?;
    let axis = usize::from(p.axis);
    ensure(axis < x.len(), "layer norm axis is not below the rank")?;
    let inner = &x[axis..];
    ensure(
        scale == inner,
        "layer norm scale is not shaped x.dims[axis..]",
    )?;
    ensure(
        bias.is_none_or(|b| b == inner),
        "layer norm bias is not shaped x.dims[axis..]",
    )?;
    ensure(x == y, "layer norm output shape differs from input")
}

/// Normalizes each row of `numel(dims[axis..])` elements; with an empty row nothing is written.
pub fn layer_norm(p: &LayerNormParams, x: In<'_>, scale: In<'_>, bias: Option<&[f32]>, y: Out<'_>) {
    let len = numel(&x.dims[usize::from(p.axis)..]);
    if len == 0 || y.data.is_empty() {
        return;
    }
    let n = len as f32;
    for (row, out) in x.data.chunks_exact(len).zip(y.data.chunks_exact_mut(len)) {
        let mean = row.iter().sum::<f32>() / n;
        let var = row.iter().map(|&v| (v - mean) * (v - mean)).sum::<f32>() / n;
        let inv_std = 1.0 / libm::sqrtf(var + p.epsilon);
        for (i, (o, &v)) in out.iter_mut().zip(row).enumerate() {
            let b = bias.map_or(0.0, |b| b[i]);
            *o = (v - mean) * inv_std * scale.data[i] + b;
        }
    }
}

/// Signature of a layer normalization kernel (`x, scale, bias`).
pub type LayerNormFn = fn(&LayerNormParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>);

op_entry! {
    /// The [`Kernels::layer_norm`](crate::Kernels::layer_norm) entry, which runs
    /// [`OpKind::LayerNorm`](crate::OpKind::LayerNorm).
    LayerNorm: LayerNormFn = layer_norm, LayerNormParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.dims(1), o.opt(2), o.out_dims()));
    infer |_p, x| dims_of_first(x);
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.opt(2)?, out(a.y)?);
}

#[cfg(test)]
mod tests {
    use crate::model::{infer_dims, infer_dtype};
    use crate::schema::{DType, OpKind, SoftmaxParams};

    use super::LayerNormParams;

    #[test]
    fn inference_gives_the_input_shape_and_f32_and_other_kinds_say_they_have_none() {
        let kind = OpKind::LayerNorm(LayerNormParams {
            axis: 1,
            epsilon: 1e-5,
        });
        let (x, scale): (&[usize], &[usize]) = (&[2, 3, 4], &[3, 4]);
        assert_eq!(infer_dims(&kind, &[x, scale]).unwrap().as_slice(), x);
        assert_eq!(infer_dtype(&kind, &[DType::F32, DType::F32]), Ok(DType::F32));
        assert!(infer_dims(&kind, &[]).is_err());
        let softmax = OpKind::Softmax(SoftmaxParams { axis: 0 });
        assert!(infer_dims(&softmax, &[x]).is_err());
    }
}
