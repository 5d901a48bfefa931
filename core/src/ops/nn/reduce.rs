//! Reductions over a set of axes: Sum, Mean, Max, Min, Prod, L1, L2, LogSumExp, SumSquare, LogSum
//! (ONNX's `Reduce*` family). Also GlobalMaxPool: a Max over H and W of an NHWC tensor, keeping the
//! dims.

pub use crate::schema::{ReduceOp, ReduceParams};

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure, for_each_offset, row_major_strides};
use crate::ops::{In, Out};
use crate::schema::MAX_RANK;
use crate::Error;

/// Checks that `axes` names axes below the rank, and that `y` is `x` with the reduced axes set to 1
/// (`keepdims`) or removed.
pub fn validate(p: &ReduceParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(
        u32::from(p.axes) >> x.len() == 0,
        "reduce axes are not below the rank",
    )?;
    let reduced = |d: usize| p.axes & (1 << d) != 0;
    let mut want = x.iter().enumerate().filter_map(|(d, &n)| match reduced(d) {
        true if p.keepdims => Some(1),
        true => None,
        false => Some(n),
    });
    let matches = y.iter().all(|&n| want.next() == Some(n)) && want.next().is_none();
    ensure(
        matches,
        "reduce output is not the input with reduced axes kept as 1 or removed",
    )
}

/// `y[i]` = the reduction of the lane of `x` that maps to output `i`.
///
/// Walks the kept axes with one odometer (the start of each lane in `x`) and the reduced axes with a
/// second one (the offsets within a lane); outputs come in row-major order either way, so `keepdims`
/// does not change the walk.
pub fn reduce(p: &ReduceParams, x: In<'_>, y: Out<'_>) {
    if y.data.is_empty() {
        return;
    }
    let rank = x.dims.len();
    let reduced = |d: usize| p.axes & (1 << d) != 0;
    let strides = row_major_strides(x.dims);
    // `kept` has the reduced axes set to 1, `lane` the kept ones: the first walks the outputs, the
    // second the elements of one output's lane.
    let (mut kept, mut lane) = ([1usize; MAX_RANK], [1usize; MAX_RANK]);
    for d in 0..rank {
        if reduced(d) {
            lane[d] = x.dims[d];
        } else {
            kept[d] = x.dims[d];
        }
    }
    let count: usize = lane[..rank].iter().product();
    let mut outputs = y.data.iter_mut();
    for_each_offset(&kept[..rank], &[strides], |[start]| {
        let Some(out) = outputs.next() else { return };
        let fold = |init: f32, f: &dyn Fn(f32, f32) -> f32| {
            let mut acc = init;
            for_each_offset(&lane[..rank], &[strides], |[o]| {
                acc = f(acc, x.data[start + o]);
            });
            acc
        };
        *out = match p.op {
            ReduceOp::Sum => fold(0.0, &|a, v| a + v),
            ReduceOp::Mean => fold(0.0, &|a, v| a + v) / count as f32,
            ReduceOp::Max => fold(f32::NEG_INFINITY, &|a, v| {
                if v > a || v.is_nan() {
                    v
                } else {
                    a
                }
            }),
            ReduceOp::Min => fold(f32::INFINITY, &|a, v| {
                if v < a || v.is_nan() {
                    v
                } else {
                    a
                }
            }),
            ReduceOp::Prod => fold(1.0, &|a, v| a * v),
            ReduceOp::L1 => fold(0.0, &|a, v| a + v.abs()),
            ReduceOp::L2 => libm::sqrtf(fold(0.0, &|a, v| a + v * v)),
            ReduceOp::SumSquare => fold(0.0, &|a, v| a + v * v),
            ReduceOp::LogSum => libm::logf(fold(0.0, &|a, v| a + v)),
            ReduceOp::LogSumExp => {
                let max = fold(f32::NEG_INFINITY, &|a, v| {
                    if v > a || v.is_nan() {
                        v
                    } else {
                        a
                    }
                });
                if max.is_infinite() {
                    // Nothing, all -inf (-inf), or some +inf (+inf): exp(x - max) would give NaN.
                    max
                } else {
                    max + libm::logf(fold(0.0, &|a, v| a + libm::expf(v - max)))
                }
            }
        };
    });
}

/// Signature of a reduction kernel.
pub type ReduceFn = fn(&ReduceParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::reduce`](crate::Kernels::reduce) entry, which runs
    /// [`OpKind::Reduce`](crate::OpKind::Reduce).
    Reduce: ReduceFn = reduce, ReduceParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
