//! Fully connected layer with weight-only int8 (`ember convert --quantize int8-weights`):
//! `y = act(scale[o] * (x . w[o]) + b[o])`, f32 activations, int8 weights read in place.
//!
//! The weights are quantized per output channel, symmetric: row `o` of the f32 weights is
//! `scale[o] * w[o]` with `w[o]` in `[-127, 127]`. The kernel never widens the weights into a buffer:
//! each row is read as int8 and converted as it is multiplied, and the row's scale is applied once to
//! the dot product (exact algebra: `sum x * (s * w) = s * sum x * w`).

use crate::ops::entry::{op_entry, out};
use crate::ops::nn::fully_connected::{check as check_f32, for_each_output};
use crate::ops::shape::{require, validate_by_check, Checked};
use crate::ops::{In, Out};
use crate::schema::{DType, FullyConnectedParams};
use crate::single_threaded_kernel;
use crate::workspace::Workspace;

validate_by_check! {
    /// Checks the shapes: as [`crate::ops::nn::fully_connected::validate`] (`x` `[..., IN]`, `w` `[OUT, IN]`,
    /// `b` `[OUT]` if present, `y` `[..., OUT]`), and `scales` `[OUT]`.
    (p: &FullyConnectedParams, x: &[usize], w: &[usize], scales: &[usize],
        b: Option<&[usize]>, y: &[usize])
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
    for_each_output(x, w, y, |x_row, w_row, o| {
        let bias = b.map_or(0.0, |b| b[o]);
        p.act.apply(scales[o] * dot_i8(x_row, w_row) + bias)
    })
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

single_threaded_kernel! {
    /// [`fully_connected_w8`] in the table's signature: it needs no scratch and runs on one thread.
    fn reference = fully_connected_w8(p: &FullyConnectedParams, x: In<'_>, w: In<'_, i8>,
        scales: &[f32], b: Option<&[f32]>, y: Out<'_>)
}

op_entry! {
    /// The [`Kernels::fully_connected_w8`](crate::Kernels::fully_connected_w8) entry, which runs
    /// [`OpKind::FullyConnectedW8`](crate::OpKind::FullyConnectedW8).
    FullyConnectedW8: FullyConnectedW8Fn = reference, FullyConnectedParams, Own;
    validate |p, o| {
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
    };
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.x::<f32>(2)?.data, a.opt(3)?, out(a.y)?, a.ws);
}
