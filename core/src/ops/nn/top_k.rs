//! The `k` largest or smallest elements along one axis and their indices (ONNX `TopK`, opsets 1, 10,
//! 11), sorted: largest (or smallest) first, equal values by lower index first (onnxruntime's order),
//! a NaN larger than every number. One node computes one of the two outputs
//! ([`TopKOutput`]): the values (the input's dtype) or the indices (int64).
//!
//! The kernel allocates nothing: the `j`-th pick of a lane is the best element ranked after the
//! `(j-1)`-th in the total order (value, then index), found by one scan, `k` scans a lane.

pub use crate::schema::nn::top_k::{TopKOutput, TopKParams};

use core::cmp::Ordering;

use crate::ops::element::{AnyIn, AnyOut, Element};
use crate::ops::entry::{shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands, OutDims};
use crate::ops::shape::{check_dims, ensure, Checked};
use crate::ops::In;
use crate::schema::DType;
use crate::Error;

/// The output's dims: `x`'s with the axis `k` long.
pub fn out_dims(p: &TopKParams, x: &[usize]) -> Result<OutDims, &'static str> {
    let axis = usize::from(p.axis);
    let len = *x.get(axis).ok_or("topk axis is not below the rank")?;
    let k = usize::try_from(p.k).map_err(|_| "topk k does not fit this machine")?;
    if k > len {
        return Err("topk k is larger than the axis");
    }
    let mut y = OutDims::from_slice(x).map_err(|_| "the input's rank is above the format's limit")?;
    y[axis] = k;
    Ok(y)
}

/// Checks the dtypes (`x` numeric; `y` of `x`'s dtype for the values, int64 for the indices), `k` at
/// most the axis' length, and `y` shaped like `x` with the axis `k` long.
pub fn validate(p: &TopKParams, x: &[usize], x_dtype: DType, y: &[usize], y_dtype: DType) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(y)?;
    ensure(x_dtype != DType::Bool, "topk of bool is not supported")?;
    let want = match p.output {
        TopKOutput::Values => x_dtype,
        TopKOutput::Indices => DType::I64,
    };
    ensure(y_dtype == want, "topk values are not of the input's dtype, or its indices not int64")?;
    let dims = out_dims(p, x).map_err(|reason| Error::Shape { reason })?;
    ensure(dims.as_slice() == y, "topk output is not the input's shape with the axis k long")
}

/// `a` ranks before `b` (values, then the lower index) for `largest` (else smallest first).
#[inline]
fn before<T: PartialOrd>(a: (T, usize), b: (T, usize), largest: bool) -> bool {
    let nan = |v: &T| v.partial_cmp(v).is_none();
    let by_value = match (nan(&a.0), nan(&b.0)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal),
    };
    let by_value = if largest { by_value.reverse() } else { by_value };
    by_value.then(a.1.cmp(&b.1)) == Ordering::Less
}

fn top_k_typed<T: Element>(p: &TopKParams, x: In<'_, T>, mut emit: impl FnMut(usize, T, usize)) {
    let axis = usize::from(p.axis);
    let len = x.dims[axis];
    let inner: usize = x.dims[axis + 1..].iter().product();
    let k = p.k as usize;
    if len == 0 || inner == 0 || k == 0 {
        return;
    }
    for (o, block) in x.data.chunks_exact(len * inner).enumerate() {
        for lane in 0..inner {
            let at = |i: usize| (block[i * inner + lane], i);
            let mut last: Option<(T, usize)> = None;
            for j in 0..k {
                let mut best: Option<(T, usize)> = None;
                for i in 0..len {
                    let c = at(i);
                    let after_last = last.is_none_or(|l| before(l, c, p.largest));
                    if after_last && best.is_none_or(|b| before(c, b, p.largest)) {
                        best = Some(c);
                    }
                }
                let Some(b) = best else { return };
                emit((o * k + j) * inner + lane, b.0, b.1);
                last = best;
            }
        }
    }
}

/// `y` = the values or the indices of the `k` best elements of each lane along the axis.
pub fn top_k(p: &TopKParams, x: AnyIn<'_>, y: AnyOut<'_>) {
    crate::with_element!(x.dtype, T => {
        let Some(x) = x.typed::<T>() else { return };
        match p.output {
            TopKOutput::Values => {
                if let Some(y) = y.typed::<T>() {
                    top_k_typed::<T>(p, x, |at, v, _| if let Some(o) = y.data.get_mut(at) { *o = v });
                }
            }
            TopKOutput::Indices => {
                if let Some(y) = y.typed::<i64>() {
                    top_k_typed::<T>(p, x, |at, _, i| if let Some(o) = y.data.get_mut(at) { *o = i as i64 });
                }
            }
        }
    })
}

/// Signature of a top-k kernel.
pub type TopKFn = fn(&TopKParams, AnyIn<'_>, AnyOut<'_>);

/// The [`Kernels::top_k`](crate::Kernels::top_k) entry, which runs
/// [`OpKind::TopK`](crate::OpKind::TopK).
pub struct TopK;

impl KernelEntry for TopK {
    type Kernel = TopKFn;
    const REFERENCE: TopKFn = top_k;
    const STUB: TopKFn = |_, _, _| {};
}

impl OpEntry for TopK {
    type Params = TopKParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &TopKParams, o: &impl Operands) -> Checked {
        shape_reason(validate(p, o.dims(0), o.dtype(0), o.out_dims(), o.out_dtype()))
    }

    fn infer(p: &TopKParams, x: &[&[usize]]) -> Result<OutDims, &'static str> {
        out_dims(p, x.first().copied().unwrap_or(&[]))
    }

    fn infer_dtype(p: &TopKParams, x: &[DType]) -> Result<DType, &'static str> {
        match p.output {
            TopKOutput::Values => x.first().copied().ok_or("the op has no input"),
            TopKOutput::Indices => Ok(DType::I64),
        }
    }

    #[inline(always)]
    fn run(kernel: TopKFn, p: &TopKParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        kernel(p, a.any(0), a.y);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<const N: usize>(p: TopKParams, x: &[f32], dims: &[usize], ydims: &[usize]) -> ([f32; N], [i64; N]) {
        let x = AnyIn { dtype: DType::F32, bytes: bytemuck::cast_slice(x), dims };
        let (mut v, mut i) = ([f32::NAN; N], [-1i64; N]);
        let pv = TopKParams { output: TopKOutput::Values, ..p };
        top_k(&pv, x, AnyOut { dtype: DType::F32, bytes: bytemuck::cast_slice_mut(&mut v), dims: ydims });
        let pi = TopKParams { output: TopKOutput::Indices, ..p };
        top_k(&pi, x, AnyOut { dtype: DType::I64, bytes: bytemuck::cast_slice_mut(&mut i), dims: ydims });
        (v, i)
    }

    fn p(axis: u8, k: u32, largest: bool) -> TopKParams {
        TopKParams { axis, k, largest, output: TopKOutput::Values }
    }

    #[test]
    fn largest_and_smallest_with_ties_by_lower_index() {
        let x = [3.0, 1.0, 3.0, 2.0, 1.0];
        assert_eq!(run::<3>(p(0, 3, true), &x, &[5], &[3]), ([3.0, 3.0, 2.0], [0, 2, 3]));
        assert_eq!(run::<3>(p(0, 3, false), &x, &[5], &[3]), ([1.0, 1.0, 2.0], [1, 4, 3]));
    }

    #[test]
    fn along_an_inner_axis_with_nan_largest() {
        // x [2, 3] read down axis 0: columns (1, 4), (NaN, 0), (5, 5).
        let x = [1.0, f32::NAN, 5.0, 4.0, 0.0, 5.0];
        let (v, i) = run::<3>(p(0, 1, true), &x, &[2, 3], &[1, 3]);
        assert_eq!(i, [1, 0, 0]);
        assert_eq!((v[0], v[2]), (4.0, 5.0));
        assert!(v[1].is_nan());
        assert_eq!(run::<3>(p(0, 1, false), &x, &[2, 3], &[1, 3]), ([1.0, 0.0, 5.0], [0, 1, 0]));
    }

    #[test]
    fn shapes_and_dtypes_are_checked() {
        let ok = |p: &TopKParams, y: &[usize], dt| validate(p, &[2, 5], DType::F32, y, dt).is_ok();
        assert!(ok(&p(1, 2, true), &[2, 2], DType::F32));
        assert!(!ok(&p(1, 6, true), &[2, 6], DType::F32));
        assert!(!ok(&p(1, 2, true), &[2, 2], DType::I64));
        let idx = TopKParams { output: TopKOutput::Indices, ..p(1, 2, true) };
        assert!(ok(&idx, &[2, 2], DType::I64));
        assert!(!ok(&p(2, 1, true), &[2, 5, 1], DType::F32));
    }
}
