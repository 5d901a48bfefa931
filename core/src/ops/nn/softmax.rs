//! Softmax and LogSoftmax along one axis, computed stably (the maximum is subtracted first).

pub use crate::schema::SoftmaxParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// Checks `axis < rank` and that `y` has the shape of `x`.
pub fn validate(p: &SoftmaxParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(
        usize::from(p.axis) < x.len(),
        "softmax axis is not below the rank",
    )?;
    ensure(x == y, "softmax output shape differs from input")
}

/// The lanes of a softmax along `axis`: the tensor is seen as `[outer, len, inner]` with `len` the
/// axis, and `lane(x_block, y_block, start, inner, len)` runs for each of the `outer * inner` lanes, whose
/// elements are at `start + j * inner` of the block of `len * inner` (a step of `inner`, contiguous when
/// the axis is the last one). Shared by the float and int8 softmaxes.
#[inline(always)]
pub(crate) fn for_each_lane<T, U>(
    axis: u8,
    x: In<'_, T>,
    y: Out<'_, U>,
    mut lane: impl FnMut(&[T], &mut [U], usize, usize, usize),
) {
    let axis = usize::from(axis);
    let len = x.dims[axis];
    let inner: usize = x.dims[axis + 1..].iter().product();
    if y.data.is_empty() {
        return;
    }
    let block = len * inner;
    for (x_block, y_block) in x
        .data
        .chunks_exact(block)
        .zip(y.data.chunks_exact_mut(block))
    {
        for start in 0..inner {
            lane(x_block, y_block, start, inner, len);
        }
    }
}

/// `y = exp(x - max) / sum(exp(x - max))` along `axis`.
///
/// The tensor is seen as `[outer, len, inner]` with `len` the axis; each of the `outer * inner` lanes is
/// read with a step of `inner` (contiguous when the axis is the last one).
pub fn softmax(p: &SoftmaxParams, x: In<'_>, y: Out<'_>) {
    for_each_lane(p.axis, x, y, |x_block, y_block, lane, inner, _| {
        let xs = || x_block[lane..].iter().step_by(inner);
        let max = xs().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let mut sum = 0.0;
        for (out, &v) in y_block[lane..].iter_mut().step_by(inner).zip(xs()) {
            let e = libm::expf(v - max);
            *out = e;
            sum += e;
        }
        // sum >= 1 (the maximum contributes exp(0)) unless the lane holds NaN or infinities.
        let scale = 1.0 / sum;
        for out in y_block[lane..].iter_mut().step_by(inner) {
            *out *= scale;
        }
    })
}

/// `y = (x - max) - log(sum(exp(x - max)))` along `axis` (LogSoftmax; same shapes as [`softmax`]).
/// `x - max` is taken first: it is exact for nearby values, which `x - (max + log(sum))` is not.
pub fn log_softmax(p: &SoftmaxParams, x: In<'_>, y: Out<'_>) {
    for_each_lane(p.axis, x, y, |x_block, y_block, lane, inner, _| {
        let xs = || x_block[lane..].iter().step_by(inner);
        let max = xs().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let sum: f32 = xs().map(|&v| libm::expf(v - max)).sum();
        let log_sum = libm::logf(sum);
        for (out, &v) in y_block[lane..].iter_mut().step_by(inner).zip(xs()) {
            *out = (v - max) - log_sum;
        }
    })
}

/// Signature of a softmax kernel (and of log-softmax).
pub type SoftmaxFn = fn(&SoftmaxParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::softmax`](crate::Kernels::softmax) entry, which runs
    /// [`OpKind::Softmax`](crate::OpKind::Softmax).
    Softmax: SoftmaxFn = softmax, SoftmaxParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}

op_entry! {
    /// The [`Kernels::log_softmax`](crate::Kernels::log_softmax) entry, which runs
    /// [`OpKind::LogSoftmax`](crate::OpKind::LogSoftmax).
    LogSoftmax: SoftmaxFn = log_softmax, SoftmaxParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
