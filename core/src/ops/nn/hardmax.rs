//! Hardmax along one axis (ONNX `Hardmax`, opset 13): 1 at the first largest element of each lane
//! along the axis, 0 elsewhere. A NaN counts as the largest, as `numpy.argmax` (ONNX's reference)
//! counts it. The parameters are softmax's: the axis.

pub use crate::schema::SoftmaxParams;

use crate::ops::entry::{dims_of_first, op_entry, out, shape_reason};
use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// Checks `axis < rank` and that `y` has the shape of `x`.
pub fn validate(p: &SoftmaxParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(
        usize::from(p.axis) < x.len(),
        "hardmax axis is not below the rank",
    )?;
    ensure(x == y, "hardmax output shape differs from input")
}

/// Writes the one-hot of each lane's first maximum along `axis` (the tensor seen as
/// `[outer, len, inner]`, as [`softmax`](super::softmax::softmax) sees it).
pub fn hardmax(p: &SoftmaxParams, x: In<'_>, y: Out<'_>) {
    let axis = usize::from(p.axis);
    let len = x.dims[axis];
    let inner: usize = x.dims[axis + 1..].iter().product();
    let block = len * inner;
    if block == 0 || y.data.is_empty() {
        return;
    }
    y.data.fill(0.0);
    for (x_block, y_block) in x
        .data
        .chunks_exact(block)
        .zip(y.data.chunks_exact_mut(block))
    {
        for lane in 0..inner {
            let mut best = lane;
            for i in (lane..block).step_by(inner) {
                let (v, b) = (x_block[i], x_block[best]);
                if !b.is_nan() && (v.is_nan() || v > b) {
                    best = i;
                }
            }
            y_block[best] = 1.0;
        }
    }
}

/// Signature of a hardmax kernel.
pub type HardmaxFn = fn(&SoftmaxParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::hardmax`](crate::Kernels::hardmax) entry, which runs
    /// [`OpKind::Hardmax`](crate::OpKind::Hardmax).
    Hardmax: HardmaxFn = hardmax, SoftmaxParams, F32;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    infer |_p, x| dims_of_first(x);
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ones_at_the_first_maximum_of_each_lane() {
        // [2, 3] along axis 1 (rows) and along axis 0 (columns); ties pick the first.
        let x = [1.0, 3.0, 3.0, -1.0, -5.0, f32::NAN];
        let dims = [2, 3];
        let run = |axis| {
            let mut y = [9.0; 6];
            hardmax(
                &SoftmaxParams { axis },
                In { data: &x, dims: &dims },
                Out { data: &mut y, dims: &dims },
            );
            y
        };
        assert_eq!(run(1), [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
        assert_eq!(run(0), [1.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
        assert!(validate(&SoftmaxParams { axis: 2 }, &dims, &dims).is_err());
    }
}
