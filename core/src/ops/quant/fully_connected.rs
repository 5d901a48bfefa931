//! int8 fully connected layer (TFLM's `FullyConnected` / `FullyConnectedPerChannel` with symmetric
//! weights): `y = clamp(requant(x - x_zero_point) * W^T + b) + y_zero_point)`.

pub use crate::schema::QuantFullyConnectedParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::nn::fully_connected as float_fc;
use crate::ops::quant::conv::{row, DotOffset, ScalarDot};
use crate::ops::quant::requant::{
    check_per_channel_dims, check_requant_input, HasOutputStage, OutputStage,
};
use crate::ops::shape::{validate_by_check, Checked};
use crate::ops::{In, Out};
use crate::schema::{Activation, FullyConnectedParams};
use crate::single_threaded_kernel;
use crate::workspace::Workspace;

validate_by_check! {
    /// Checks the shapes: the float layer's rules (see
    /// [`nn::fully_connected::validate`](float_fc::validate): `x` `[..., IN]`, `w` `[OUT, IN]`, `b` `[OUT]`
    /// if present, `y` `[..., OUT]`), and `requant` `[OUT, 2]` or `[1, 2]`.
    (_p: &QuantFullyConnectedParams, x: &[usize], w: &[usize], b: Option<&[usize]>,
        requant: &[usize], y: &[usize])
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(
    _p: &QuantFullyConnectedParams,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    requant: &[usize],
    y: &[usize],
) -> Checked {
    let float_params = FullyConnectedParams {
        act: Activation::None,
    };
    float_fc::check(&float_params, x, w, b, y)?;
    check_per_channel_dims(requant, w[0])
}

/// `y[r, o] = clamp(requant_o(sum_i w[o, i] * (x[r, i] - x_zero_point) + b[o]) + y_zero_point)` for every
/// row `r` of `x`, accumulated in int32 (wrapping) as TFLM does.
pub fn fully_connected(
    p: &QuantFullyConnectedParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
) {
    fully_connected_with::<ScalarDot>(p, x, w, p.output_stage(b, requant), y)
}

/// [`fully_connected`]'s loop nest, finishing each output with `stage`, with the inner product `D`:
/// one `D::dot` per row and output, or, where [`DotOffset::PAIRS`], one `D::dot2` per row and two
/// outputs. A target runs it with its own inner product (ember-cortex-m's SMLAD one) and gets the
/// reference's results.
#[inline(always)]
pub fn fully_connected_with<D: DotOffset>(
    p: &QuantFullyConnectedParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    stage: OutputStage<'_>,
    y: Out<'_, i8>,
) {
    let (out_features, in_features) = (w.dims[0], w.dims[1]);
    if y.data.is_empty() {
        return;
    }
    let x_offset = -i32::from(p.x_zero_point);
    // Rows by `get` (validated shapes keep them in bounds): no panic path in the binary.
    let w_row = |o: usize| row(w.data, o, in_features);
    for (r, y_row) in y.data.chunks_exact_mut(out_features).enumerate() {
        let x_row = row(x.data, r, in_features);
        if !D::PAIRS {
            for (o, out) in y_row.iter_mut().enumerate() {
                *out = stage.finish(D::dot(x_row, w_row(o), x_offset), o);
            }
            continue;
        }
        let mut pairs = y_row.chunks_exact_mut(2);
        for (pair, outs) in (&mut pairs).enumerate() {
            let o = 2 * pair;
            let (da, db) = D::dot2(x_row, w_row(o), w_row(o + 1), x_offset);
            outs[0] = stage.finish(da, o);
            outs[1] = stage.finish(db, o + 1);
        }
        if let [last] = pairs.into_remainder() {
            let o = out_features - 1;
            *last = stage.finish(D::dot(x_row, w_row(o), x_offset), o);
        }
    }
}

/// Signature of an int8 fully connected kernel (`x, w, bias, requant, y`, and its [`Workspace`]).
pub type QuantFullyConnectedFn = fn(
    &QuantFullyConnectedParams,
    In<'_, i8>,
    In<'_, i8>,
    Option<&[i32]>,
    &[i32],
    Out<'_, i8>,
    Option<&mut Workspace<'_>>,
);

single_threaded_kernel! {
    /// [`fully_connected`] in the table's signature: it needs no scratch and runs on one thread.
    fn reference = fully_connected(p: &QuantFullyConnectedParams, x: In<'_, i8>, w: In<'_, i8>,
        b: Option<&[i32]>, requant: &[i32], y: Out<'_, i8>)
}

op_entry! {
    /// The [`Kernels::quant_fully_connected`](crate::Kernels::quant_fully_connected) entry, which runs
    /// [`OpKind::QuantFullyConnected`](crate::OpKind::QuantFullyConnected).
    QuantFullyConnected: QuantFullyConnectedFn = reference, QuantFullyConnectedParams, Int8[I8, I8, I32, I32] -> I8;
    validate |p, o| {
        check(p, o.dims(0), o.dims(1), o.opt(3), o.dims(2), o.out_dims())?;
        check_requant_input(o)
    };
    run |kernel, p, a| kernel(p, a.x(0)?, a.x(1)?, a.opt(3)?, a.x::<i32>(2)?.data, out(a.y)?, a.ws);
}
