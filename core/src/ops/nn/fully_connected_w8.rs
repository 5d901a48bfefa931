//! Fully connected layer with weight-only int8 (`ember convert --quantize int8-weights`):
//! `y = act(scale[o] * (x . w[o]) + b[o])`, f32 activations, int8 weights read in place.
//!
//! The weights are quantized per output channel, symmetric: row `o` of the f32 weights is
//! `scale[o] * w[o]` with `w[o]` in `[-127, 127]`. The kernel never widens the weights into a buffer:
//! each row is read as int8 and converted as it is multiplied, and the row's scale is applied once to
//! the dot product (exact algebra: `sum x * (s * w) = s * sum x * w`).

use crate::ops::entry::{out, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::nn::fully_connected::check as check_f32;
use crate::ops::shape::{require, shape_error, Checked};
use crate::ops::{In, Out};
use crate::schema::{DType, FullyConnectedParams};
use crate::workspace::Workspace;
use crate::Error;

/// Checks the shapes: as [`crate::ops::nn::fully_connected::validate`] (`x` `[..., IN]`, `w` `[OUT, IN]`,
/// `b` `[OUT]` if present, `y` `[..., OUT]`), and `scales` `[OUT]`.
pub fn validate(
    p: &FullyConnectedParams,
    x: &[usize],
    w: &[usize],
    scales: &[usize],
    b: Option<&[usize]>,
    y: &[usize],
) -> Result<(), Error> {
    check(p, x, w, scales, b, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`].
pub(crate) fn check(
    p: &FullyConnectedParams,
    x: &[usize],
    w: &[usize],
    scales: &[usize],
    b: Option<&[usize]>,
    y: &[usize],
) -> Checked {
    check_f32(p, x, w, b, y)?;
    require(
        scales.len() == 1 && scales[0] == w[0],
        "weight-only int8 fully connected scales are not [OUT]",
    )
}

/// `x . w` with the int8 weights converted as they are read (the reference order: one running sum,
/// left to right).
#[inline]
pub fn dot_i8(x: &[f32], w: &[i8]) -> f32 {
    x.iter()
        .zip(w)
        .fold(0.0, |acc, (&u, &v)| acc + u * f32::from(v))
}

/// `y[r, o] = act(scales[o] * sum_i x[r, i] * w[o, i] + b[o])` for every row `r` of `x`.
pub fn fully_connected_w8(
    p: &FullyConnectedParams,
    x: In<'_>,
    w: In<'_, i8>,
    scales: &[f32],
    b: Option<&[f32]>,
    y: Out<'_>,
) {
    let in_features = w.dims[1];
    let out_features = w.dims[0];
    if y.data.is_empty() {
        return;
    }
    for (r, y_row) in y.data.chunks_exact_mut(out_features).enumerate() {
        let x_row = &x.data[r * in_features..][..in_features];
        for (o, out) in y_row.iter_mut().enumerate() {
            let w_row = &w.data[o * in_features..][..in_features];
            let bias = b.map_or(0.0, |b| b[o]);
            *out = p.act.apply(scales[o] * dot_i8(x_row, w_row) + bias);
        }
    }
}

/// Signature of a weight-only int8 fully connected kernel (`x, w, scales, bias, y`, and its
/// [`Workspace`]).
pub type FullyConnectedW8Fn = fn(
    &FullyConnectedParams,
    In<'_>,
    In<'_, i8>,
    &[f32],
    Option<&[f32]>,
    Out<'_>,
    Option<&mut Workspace<'_>>,
);

/// [`fully_connected_w8`] in the table's signature: it needs no scratch and runs on one thread.
fn reference(
    p: &FullyConnectedParams,
    x: In<'_>,
    w: In<'_, i8>,
    scales: &[f32],
    b: Option<&[f32]>,
    y: Out<'_>,
    _: Option<&mut Workspace<'_>>,
) {
    fully_connected_w8(p, x, w, scales, b, y)
}

/// The [`Kernels::fully_connected_w8`](crate::Kernels::fully_connected_w8) entry, which runs
/// [`OpKind::FullyConnectedW8`](crate::OpKind::FullyConnectedW8).
pub struct FullyConnectedW8;

impl KernelEntry for FullyConnectedW8 {
    type Kernel = FullyConnectedW8Fn;
    const REFERENCE: FullyConnectedW8Fn = reference;
    const STUB: FullyConnectedW8Fn = |_, _, _, _, _, _, _| {};
}

impl OpEntry for FullyConnectedW8 {
    type Params = FullyConnectedParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &FullyConnectedParams, o: &impl Operands) -> Checked {
        let n = o.count();
        let f32_at = |k: usize| k >= n || o.dtype(k) == DType::F32;
        require(
            o.out_dtype() == DType::F32
                && f32_at(0)
                && o.dtype(1) == DType::I8
                && f32_at(2)
                && f32_at(3),
            "weight-only int8 fully connected needs int8 weights and f32 input, scales, bias and output",
        )?;
        check(p, o.dims(0), o.dims(1), o.dims(2), o.opt(3), o.out_dims())
    }

    #[inline(always)]
    fn run(
        kernel: FullyConnectedW8Fn,
        p: &FullyConnectedParams,
        a: OpArgs<'_, '_>,
    ) -> Result<(), Error> {
        let bias = a.opt(3)?;
        let scales = a.x::<f32>(2)?.data;
        kernel(p, a.x(0)?, a.x(1)?, scales, bias, out(a.y)?, a.ws);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Activation;

    #[test]
    fn matches_the_dequantized_weights() {
        let p = FullyConnectedParams {
            act: Activation::Relu,
        };
        let x = [1.0, -2.0, 0.5];
        let w: [i8; 6] = [127, -127, 3, 0, 5, -64];
        let scales = [0.01, 0.5];
        let b = [0.25, -1.0];
        let mut y = [0.0; 2];
        fully_connected_w8(
            &p,
            In {
                data: &x,
                dims: &[1, 3],
            },
            In {
                data: &w,
                dims: &[2, 3],
            },
            &scales,
            Some(&b),
            Out {
                data: &mut y,
                dims: &[1, 2],
            },
        );
        let want0 = 0.01f32 * (127.0 + 254.0 + 1.5) + 0.25;
        let want1 = (0.5f32 * (0.0 - 10.0 - 32.0) - 1.0).max(0.0);
        assert_eq!(y, [want0, want1]);
        assert!(validate(&p, &[1, 3], &[2, 3], &[2], Some(&[2]), &[1, 2]).is_ok());
        assert!(validate(&p, &[1, 3], &[2, 3], &[3], None, &[1, 2]).is_err());
    }
}
