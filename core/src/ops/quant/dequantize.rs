//! Dequantize: int8 to f32 at a graph output (TFLM's `Dequantize`; ONNX `DequantizeLinear`).

pub use crate::schema::DequantizeParams;

use crate::ops::entry::{op_entry, out};
use crate::ops::shape::{dims_fit, require, same_dims, shape_error, Checked};
use crate::ops::{In, Out};
use crate::Error;

/// Checks that `y` has the shape of `x` and that the scale is finite and positive.
pub fn validate(p: &DequantizeParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check(p, x, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(p: &DequantizeParams, x: &[usize], y: &[usize]) -> Checked {
    dims_fit(x)?;
    require(
        same_dims(x, y),
        "dequantize output shape differs from input",
    )?;
    require(
        p.scale.is_finite() && p.scale > 0.0,
        "dequantize scale is not finite and positive",
    )
}

/// `y = scale * (x - zero_point)`, rounded once to f32. `x - zero_point` (within +-255) is exact in f32 and
/// an IEEE multiplication rounds the exact product once, so this equals the product taken exactly in f64
/// and then rounded to f32 (TFLM's result), without pulling soft-float f64 code into an MCU build.
pub fn dequantize(p: &DequantizeParams, x: In<'_, i8>, y: Out<'_>) {
    for (out, &v) in y.data.iter_mut().zip(x.data) {
        let centered = i32::from(v) - i32::from(p.zero_point);
        *out = p.scale * centered as f32;
    }
}

/// Signature of a dequantize kernel.
pub type DequantizeFn = fn(&DequantizeParams, In<'_, i8>, Out<'_>);

op_entry! {
    /// The [`Kernels::dequantize`](crate::Kernels::dequantize) entry, which runs
    /// [`OpKind::Dequantize`](crate::OpKind::Dequantize).
    Dequantize: DequantizeFn = dequantize, DequantizeParams, Int8[I8] -> F32;
    validate |p, o| check(p, o.dims(0), o.out_dims());
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f32 product equals the exact product rounded once (computed in f64, where it is exact) for
    /// every int8 value, zero point and a spread of scales from subnormal-producing to huge.
    #[test]
    fn equals_the_exact_product_rounded_once() {
        let mut bits = 0x0000_0001u32;
        while bits < 0x7f80_0000 {
            let scale = f32::from_bits(bits);
            for zero_point in [-128i8, -7, 0, 3, 127] {
                let x: [i8; 256] = core::array::from_fn(|i| (i as i32 - 128) as i8);
                let mut y = [0f32; 256];
                let p = DequantizeParams { scale, zero_point };
                let dims = [256];
                let x_in = In {
                    data: &x,
                    dims: &dims,
                };
                let y_out = Out {
                    data: &mut y,
                    dims: &dims,
                };
                dequantize(&p, x_in, y_out);
                for (&q, &got) in x.iter().zip(&y) {
                    let centered = f64::from(i32::from(q) - i32::from(zero_point));
                    let want = (f64::from(scale) * centered) as f32;
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "scale {scale:e} q {q} zp {zero_point}"
                    );
                }
            }
            // About 1,500 scales, each 1.6% above the last (bit patterns grow with the value).
            bits += bits / 64 + 1;
        }
    }
}
