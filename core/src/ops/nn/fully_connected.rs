//! Fully connected layer (ONNX Gemm with a constant weight): `y = act(x * W^T + b)`.

pub use crate::schema::FullyConnectedParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::shape::{dims_fit, dot, require, same_dims, validate_by_check, Checked};
use crate::ops::{In, Out};
use crate::single_threaded_kernel;
use crate::workspace::Workspace;

validate_by_check! {
    /// Checks the shapes: `x` `[..., IN]` (rank >= 1; leading dims are batch), `w` `[OUT, IN]`, `b` `[OUT]` if
    /// present, `y` `[..., OUT]` with the same leading dims as `x`.
    (_p: &FullyConnectedParams, x: &[usize], w: &[usize], b: Option<&[usize]>, y: &[usize])
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(
    _p: &FullyConnectedParams,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    y: &[usize],
) -> Checked {
    dims_fit(x)?;
    dims_fit(w)?;
    dims_fit(y)?;
    require(w.len() == 2, "fully connected weights are not [OUT, IN]")?;
    let (out_features, in_features) = (w[0], w[1]);
    let Some((&x_last, x_lead)) = x.split_last() else {
        return Err("fully connected input has rank 0");
    };
    require(
        x_last == in_features,
        "fully connected input's last dim differs from weights' IN",
    )?;
    if let Some(b) = b {
        require(
            b.len() == 1 && b[0] == out_features,
            "fully connected bias is not [OUT]",
        )?;
    }
    let Some((&y_last, y_lead)) = y.split_last() else {
        return Err("fully connected output has rank 0");
    };
    require(
        same_dims(y_lead, x_lead),
        "fully connected output's leading dims differ from input's",
    )?;
    require(
        y_last == out_features,
        "fully connected output's last dim differs from weights' OUT",
    )
}

/// `y[r, o] = act(sum_i x[r, i] * w[o, i] + b[o])` for every row `r` of `x`.
pub fn fully_connected(
    p: &FullyConnectedParams,
    x: In<'_>,
    w: In<'_>,
    b: Option<&[f32]>,
    y: Out<'_>,
) {
    for_each_output(x, w, y, |x_row, w_row, o| {
        let bias = b.map_or(0.0, |b| b[o]);
        p.act.apply(dot(x_row, w_row) + bias)
    })
}

/// The loop of the fully connected layers (f32 and weight-only int8 weights): `y[r, o] =
/// output(x_row, w_row, o)` for every row `r` of `x` and output `o`, with `x_row` row `r` of `x` and
/// `w_row` row `o` of `w` (`IN` values each).
#[inline(always)]
pub(crate) fn for_each_output<W>(
    x: In<'_>,
    w: In<'_, W>,
    y: Out<'_>,
    output: impl Fn(&[f32], &[W], usize) -> f32,
) {
    let in_features = w.dims[1];
    let out_features = w.dims[0];
    if y.data.is_empty() {
        return;
    }
    for (r, y_row) in y.data.chunks_exact_mut(out_features).enumerate() {
        let x_row = &x.data[r * in_features..][..in_features];
        for (o, out) in y_row.iter_mut().enumerate() {
            *out = output(x_row, &w.data[o * in_features..][..in_features], o);
        }
    }
}

/// Signature of a fully connected kernel.
pub type FullyConnectedFn =
    fn(&FullyConnectedParams, In<'_>, In<'_>, Option<&[f32]>, Out<'_>, Option<&mut Workspace<'_>>);

single_threaded_kernel! {
    /// [`fully_connected`] in the table's signature: it needs no scratch and runs on one thread.
    fn reference = fully_connected(p: &FullyConnectedParams, x: In<'_>, w: In<'_>, b: Option<&[f32]>, y: Out<'_>)
}

op_entry! {
    /// The [`Kernels::fully_connected`](crate::Kernels::fully_connected) entry, which runs
    /// [`OpKind::FullyConnected`](crate::OpKind::FullyConnected).
    FullyConnected: FullyConnectedFn = reference, FullyConnectedParams, F32;
    validate |p, o| check(p, o.dims(0), o.dims(1), o.opt(2), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.opt(2)?, out(a.y)?, a.ws);
}
