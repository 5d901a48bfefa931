//! Dequantize: int8 to f32 at a graph output (TFLM's `Dequantize`; ONNX `DequantizeLinear`).

use serde::{Deserialize, Serialize};

use crate::ops::shape::{check_dims, ensure};
use crate::ops::{In, Out};
use crate::Error;

/// Parameters of a dequantization (per tensor).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DequantizeParams {
    /// Scale of the input (finite, positive).
    pub scale: f32,
    /// Zero point of the input.
    pub zero_point: i8,
}

/// Checks that `y` has the shape of `x` and that the scale is finite and positive.
pub fn validate(p: &DequantizeParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(x == y, "dequantize output shape differs from input")?;
    ensure(
        p.scale.is_finite() && p.scale > 0.0,
        "dequantize scale is not finite and positive",
    )
}

/// `y = scale * (x - zero_point)`, rounded once to f32 (the product is exact in f64, as in TFLM).
pub fn dequantize(p: &DequantizeParams, x: In<'_, i8>, y: Out<'_>) {
    let scale = f64::from(p.scale);
    for (out, &v) in y.data.iter_mut().zip(x.data) {
        let centered = i32::from(v) - i32::from(p.zero_point);
        *out = (scale * f64::from(centered)) as f32;
    }
}
